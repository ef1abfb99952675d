"""Multivariate sliding windows of one CSV for unconditional generation: Diffusion-TS's data protocol (Yuan & Qiao,
ICLR 2024; Y-debug-sys/Diffusion-TS ``Utils/Data_utils/real_datasets.py`` ``CustomDataset``, ``Config/etth.yaml``).

Every column but the date column is a channel; each channel is min-max scaled with the minimum and maximum of the
whole file (``MinMaxScaler().fit(data)``), then mapped to [-1, 1] (``normalize_to_neg_one_to_one``), and cut into
windows of ``seq_len`` rows at stride 1 (``len - seq_len + 1`` windows). The model trains on every window
(``proportion: 1.0`` for unconditional generation) and the test compares generated windows with all of them in
[0, 1] (``*_norm_truth_24_train.npy``); :mod:`zoo_tasks.timeseries.generation.diffusion_ts_evaluation` runs it.

Batches are ``(x (B, L, C) in [-1, 1], domain (B,) zeros)``, the shape the DiT trains on. Validation is the
diffusion loss on a seeded ``val_portion`` of the windows: they are training windows too (Diffusion-TS holds
nothing out), so ``val/loss`` is a fixed-draw training loss that picks the checkpoint, not a held-out score.
The file comes from the ``zoo.data`` catalog (``ETT-small``: found in ``$ZOO_DATA_MIRROR`` or downloaded, sha256
checked) or from ``path`` (a user's CSV in the format of ``docs/tasks/seer.md``: read as is, its sha256 recorded).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytorch_lightning as pl
import torch
from torch.utils.data import DataLoader, Dataset

from zoo.data import resolve
from zoo.data.resolve import sha256_of
from zoo.data.resumable import resumable_train_loader
from zoo.errors import ConfigError
from zoo_tasks.timeseries.data import read_header, read_series


def sliding_windows(values: np.ndarray, seq_len: int) -> np.ndarray:
    """(rows - seq_len + 1, seq_len, C) windows at stride 1 of ``values`` (rows, C) (a copy)."""
    if len(values) < seq_len:
        raise ConfigError(f"the series has {len(values)} rows, fewer than data.init_args.seq_len = {seq_len}")
    return np.lib.stride_tricks.sliding_window_view(values, seq_len, axis=0).transpose(0, 2, 1).copy()


class MinMaxScaler:
    """Per-channel min-max scaling to [0, 1] fitted on (rows, C) values (scikit-learn's ``MinMaxScaler``: a constant
    channel gets a range of 1); works on any array whose last axis is the channel."""

    def __init__(self, values: np.ndarray):
        self.low = values.min(axis=0)
        span = values.max(axis=0) - self.low
        self.span = np.where(span == 0, 1.0, span)

    def transform(self, x: np.ndarray) -> np.ndarray:
        return (x - self.low) / self.span

    def inverse(self, x: np.ndarray) -> np.ndarray:
        return x * self.span + self.low


def to_unit(x: np.ndarray) -> np.ndarray:
    """[-1, 1] -> [0, 1] (Diffusion-TS's ``unnormalize_to_zero_to_one``)."""
    return (x + 1) * 0.5


class _Windows(Dataset):
    """Items ``(x (L, C) float32, 0)`` of ``windows`` (N, L, C) at positions ``index``."""

    def __init__(self, windows: torch.Tensor, index: np.ndarray):
        self.windows, self.index = windows, index

    def __len__(self) -> int:
        return len(self.index)

    def __getitem__(self, i: int):
        return self.windows[self.index[i]], 0


class MultivariateWindowsDataModule(pl.LightningDataModule):
    """Stride-1 windows of a multivariate CSV in [-1, 1], Diffusion-TS's unconditional-generation data (ETTh: the
    catalog's ``ETT-small/ETTh1.csv``, 7 channels, 17,420 rows -> 17,397 windows of 24).

    Args:
        file: CSV file name in ``dataset`` (Diffusion-TS's ``ETTh.csv`` is ETTh1, its README's "ETTh1").
        dataset: ``zoo.data`` catalog name (sha256-checked), or None to read ``data_dir/file`` as is.
        data_dir: explicit folder holding ``file``.
        path: a user's own CSV; when given, ``file``, ``dataset`` and ``data_dir`` are not used.
        date_column: the timestamp column, dropped. columns: the channels in order (None: every other column).
        seq_len: window length L (Diffusion-TS: 24).
        val_portion: share of the windows whose fixed-draw diffusion loss is ``val/loss`` (they are trained on).
        seed: the seed of that subset.

    Batches: ``(x (B, L, C) float32 in [-1, 1], domain (B,) zeros)``; ``unit_windows()`` (N, L, C) in [0, 1];
    ``model_shapes()`` gives ``{"seq_len": L, "channels": C}`` (C from the header line alone).
    """

    bounded = True  # windows lie in [-1, 1]: the sampler clips its x_0 estimate there
    catalogue_fields = {"dataset": "stem", "file": "name"}  # with `path`: its name (zoo.cli.dataset_name)

    def __init__(
        self,
        file: str = "ETTh1.csv",
        dataset: str | None = "ETT-small",
        data_dir: str | None = None,
        path: str | None = None,
        date_column: str = "date",
        columns: list[str] | None = None,
        seq_len: int = 24,
        val_portion: float = 0.1,
        batch_size: int = 256,
        num_workers: int = 0,
        seed: int = 0,
    ):
        super().__init__()
        for key, value in (("seq_len", seq_len), ("batch_size", batch_size)):
            if value <= 0:
                raise ConfigError(f"data.init_args.{key} must be > 0, got {value}")
        if not 0 < val_portion < 1:
            raise ConfigError(f"data.init_args.val_portion must be in (0, 1), got {val_portion}")
        if num_workers < 0:
            raise ConfigError(f"data.init_args.num_workers must be >= 0, got {num_workers}")
        self.save_hyperparameters()
        self.windows: np.ndarray | None = None
        self._x: torch.Tensor | None = None
        self.scaler: MinMaxScaler | None = None
        self.channels: list[str] = []
        self._csv: Path | None = None
        self._val: np.ndarray | None = None

    @property
    def name(self) -> str:
        """The series' name in plots and expert-load groups: the CSV's stem (``ETTh1``)."""
        return Path(self.hparams.path or self.hparams.file).stem

    def csv_path(self) -> Path:
        """The CSV this module reads (found, and for a catalog dataset verified, once)."""
        if self._csv is None:
            hp = self.hparams
            if hp.path is not None:
                path = Path(hp.path).expanduser()
            elif hp.dataset is not None:
                path = resolve(hp.dataset, path=hp.data_dir, files=[hp.file]) / hp.file
            elif hp.data_dir is not None:
                path = Path(hp.data_dir).expanduser() / hp.file
            else:
                raise ConfigError("give data.init_args.path (a CSV), a catalog `dataset`, or a `data_dir` with `file`")
            if not path.is_file():
                raise ConfigError(f"no CSV file at {path}")
            self._csv = path
        return self._csv

    def model_shapes(self) -> dict[str, int]:
        hp = self.hparams
        return {"seq_len": hp.seq_len, "channels": len(read_header(self.csv_path(), hp.date_column, hp.columns))}

    def data_sha256(self) -> dict[str, str]:
        """{file name: sha256} of the CSV (recorded with the run)."""
        path = self.csv_path()
        return {path.name: sha256_of(path)}

    def setup(self, stage: str | None = None) -> None:
        if self.windows is not None:
            return
        hp = self.hparams
        values, self.channels = read_series(self.csv_path(), hp.date_column, hp.columns)
        values = values.astype(np.float64)
        self.scaler = MinMaxScaler(values)
        windows = sliding_windows(self.scaler.transform(values) * 2 - 1, hp.seq_len)
        if len(windows) < max(2, hp.batch_size):
            raise ConfigError(
                f"{self.csv_path()} gives {len(windows)} windows of {hp.seq_len} rows, fewer than "
                f"data.init_args.batch_size = {hp.batch_size} (and 2): use a longer series or a smaller batch"
            )
        self.windows, self._x = windows, torch.from_numpy(windows.astype(np.float32))
        n_val = max(1, int(len(self.windows) * hp.val_portion))
        self._val = np.sort(np.random.default_rng(hp.seed).permutation(len(self.windows))[:n_val])

    def unit_windows(self) -> np.ndarray:
        """Every window (N, L, C) min-max scaled to [0, 1]: the real side of Diffusion-TS's metrics."""
        self.setup()
        return to_unit(self.windows)

    def train_dataloader(self) -> DataLoader:
        self.setup()
        hp = self.hparams
        data = _Windows(self._x, np.arange(len(self.windows)))
        common = dict(num_workers=hp.num_workers, persistent_workers=hp.num_workers > 0)
        return resumable_train_loader(data, batch_size=hp.batch_size, **common)

    def val_dataloader(self) -> DataLoader:
        self.setup()
        data = _Windows(self._x, self._val)
        return DataLoader(data, batch_size=self.hparams.batch_size, shuffle=False, drop_last=False)

    def test_dataloader(self) -> DataLoader:
        """One item: the test step generates and scores the whole set at once."""
        self.setup()
        return DataLoader([0], batch_size=1, collate_fn=lambda items: items[0])
