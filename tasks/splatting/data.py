"""D-NeRF datamodule: one view (image, time, camera) per batch, train / val / test splits of one scene.

The catalogued scenes (``scene="standup"``) resolve through ``zoo.data`` (sha256-verified, offline mirror first); a
user's own scene in the same format is ``path`` (a folder with ``transforms_{train,val,test}.json``), not checked
against the catalogue (its files' sha256 are reported by ``data_sha256()``). ``scene_identity()`` names the scene and
hashes its content (:func:`~zoo_tasks.splatting.dnerf.scene_sha256`) for the expert exports
(:mod:`zoo_tasks.splatting.exports`).
"""

from __future__ import annotations

from pathlib import Path

import pytorch_lightning as pl
import torch
from torch.utils.data import DataLoader, Dataset

from zoo.data import get_dataset_spec, resolve, sha256_of
from zoo.errors import ConfigError, DatasetNotFoundError
from zoo_tasks.splatting.dnerf import SPLITS, Views, read_split, scene_sha256


def catalogued_scenes() -> list[str]:
    """The scenes of the ``D-NeRF`` catalogue entry (the folders its checksums cover)."""
    return sorted({rel.split("/")[0] for rel in get_dataset_spec("D-NeRF").checksums})


class ViewDataset(Dataset):
    """Item i of a split: ``{"image": (H, W, 3), "time": (), "viewmat": (4, 4), "K": (3, 3), "background": (3,),
    "index": ()}``."""

    def __init__(self, views: Views) -> None:
        self.views = views

    def __len__(self) -> int:
        return len(self.views)

    def __getitem__(self, i: int) -> dict:
        v = self.views
        return {
            "image": v.images[i],
            "time": v.times[i],
            "viewmat": v.viewmats[i],
            "K": v.K,
            "background": v.background,
            "index": i,
        }


class DNeRFDataModule(pl.LightningDataModule):
    """A D-NeRF-format dynamic scene.

    Args:
        scene: catalogued scene name (a folder of the ``D-NeRF`` dataset), used when ``path`` is None.
        data_dir: explicit location of the ``D-NeRF`` dataset folder (else ``$ZOO_DATA_DIR`` / the mirror).
        path: a user's scene folder in the D-NeRF format (skips the catalogue and its checksums).
        downscale: integer image downscale factor (800 px / 8 = 100 px).
        background: ``"white"`` or ``"black"``: what the transparent background is composited onto.
        num_workers: dataloader workers.
    """

    catalogue_fields = {"scene": "name"}  # with `path`: the scene folder's name (zoo.cli.dataset_name)

    def __init__(
        self,
        scene: str = "standup",
        data_dir: str | None = None,
        path: str | None = None,
        downscale: int = 8,
        background: str = "white",
        num_workers: int = 0,
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.splits: dict[str, Views] = {}
        self._identity: dict[str, str] | None = None

    def scene_folder(self) -> Path:
        """The scene's folder: ``path``, or the catalogued scene resolved and verified."""
        if self.hparams.path is not None:
            folder = Path(self.hparams.path).expanduser()
            if not folder.is_dir():
                raise DatasetNotFoundError(f"path={self.hparams.path!r} is not a folder")
            return folder
        scene = self.hparams.scene
        known = catalogued_scenes()
        if scene not in known:
            raise ConfigError(f"scene={scene!r} is not catalogued: choose one of {', '.join(known)} or pass path=")
        return resolve("D-NeRF", path=self.hparams.data_dir, files=[scene]) / scene

    def scene_name(self) -> str:
        """The scene's name: the catalogued ``scene``, or the folder name of ``path``."""
        if self.hparams.path is not None:
            return Path(self.hparams.path).expanduser().resolve().name
        return self.hparams.scene

    def scene_identity(self) -> dict[str, str]:
        """``{"name": scene name, "sha256": the scene's content hash}`` (computed once), which expert exports
        record and the MoE-GS stages compare."""
        if self._identity is None:
            self._identity = {"name": self.scene_name(), "sha256": scene_sha256(self.scene_folder())}
        return self._identity

    def split(self, name: str) -> Views:
        """The frames of split ``name`` (read once)."""
        if name not in self.splits:
            h = self.hparams
            self.splits[name] = read_split(self.scene_folder(), name, h.downscale, h.background)
        return self.splits[name]

    def setup(self, stage: str | None = None) -> None:
        for name in SPLITS:
            self.split(name)

    def data_sha256(self) -> dict[str, str]:
        """sha256 of every file of a user's scene (``path``); empty for catalogued scenes (verified on load)."""
        if self.hparams.path is None:
            return {}
        folder = self.scene_folder()
        return {str(f.relative_to(folder)): sha256_of(f) for f in sorted(folder.rglob("*")) if f.is_file()}

    def _loader(self, name: str, shuffle: bool) -> DataLoader:
        generator = torch.Generator().manual_seed(torch.initial_seed() % 2**31) if shuffle else None
        return DataLoader(
            ViewDataset(self.split(name)),
            batch_size=1,
            shuffle=shuffle,
            num_workers=self.hparams.num_workers,
            generator=generator,
        )

    def train_dataloader(self) -> DataLoader:
        return self._loader("train", shuffle=True)

    def val_dataloader(self) -> DataLoader:
        return self._loader("val", shuffle=False)

    def test_dataloader(self) -> DataLoader:
        return self._loader("test", shuffle=False)
