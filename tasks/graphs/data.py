"""Datamodules: Planetoid node classification (public split) and TU graph classification (stratified k-fold).

Catalogued datasets are read through ``zoo.data`` (sha256-verified, offline mirror first); a user's own dataset
is ``path``: a folder in PyG's raw layout (Planetoid ``ind.<name>.*``, TU ``<NAME>_*.txt``), any dataset name,
not checked against the catalogue (its files' sha256 are reported by ``data_sha256()``). Either way PyG gets a
writable folder of symlinks, so its ``processed/`` never lands next to the user's or the mirror's files.
``model_shapes()`` gives the model's ``in_dim`` / ``num_classes`` from the data (``zoo`` CLI shape inference).
"""

from __future__ import annotations

import hashlib
import pickle
import re
import shutil
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import numpy as np
import pytorch_lightning as pl
from sklearn.model_selection import train_test_split
from torch_geometric.datasets import Planetoid, TUDataset
from torch_geometric.loader import DataLoader

from zoo.data import cache_dir, get_dataset_spec, sha256_of, writable_copy
from zoo.data.build_lock import build_lock
from zoo.data.finite import require_finite
from zoo.errors import ConfigError, DatasetNotFoundError
from zoo.utils.folds import stratified_fold
from zoo_tasks.graphs.checks import check_choice
from zoo_tasks.graphs.experts import AddTwoHopEdges
from zoo_tasks.graphs.features import NODE_FEATURES, NodeFeatures
from zoo_tasks.graphs.tu_files import check_tu_files

PLANETOID_PARTS = ("x", "tx", "allx", "y", "ty", "ally", "graph", "test.index")
TU_REQUIRED = ("A", "graph_indicator", "graph_labels")
Dataset = TypeVar("Dataset")


def open_pyg_dataset(family: str, name: str, root_of: Callable[[], Path], make: Callable[[Path], Dataset]) -> Dataset:
    """``make(root_of())`` under the dataset's build lock (:func:`zoo.data.build_lock.build_lock`), so concurrent
    processes never read a ``processed/`` folder another one is writing. A ``processed/`` that cannot be read (a
    build killed mid-write) is removed and built again once, with a warning; a second failure propagates."""
    with build_lock(f"{family}-{name}"):
        root = root_of()
        processed = root / name / "processed"
        had_cache = processed.is_dir()
        try:
            return make(root)
        except (RuntimeError, EOFError, OSError, pickle.UnpicklingError) as err:
            if not had_cache:
                raise
            warnings.warn(f"{processed}: unreadable cache ({str(err).splitlines()[0]}); rebuilding it", stacklevel=2)
            shutil.rmtree(processed)
            return make(root)


def catalogued(family: str, name: str) -> bool:
    """Whether dataset ``name`` of ``family`` is in the zoo catalogue (its raw files sha256-verified)."""
    return any(rel.startswith(f"{name}/raw/") for rel in get_dataset_spec(family).checksums)


def pyg_root(family: str, name: str, data_dir: str | None) -> Path:
    """Root folder for a PyG dataset class: a writable copy for catalogued datasets, else ``data_dir``."""
    if catalogued(family, name):
        return writable_copy(family, path=data_dir, files=[f"{name}/raw"])
    if data_dir is None:
        raise DatasetNotFoundError(
            f"{family} dataset name={name!r} is not in the zoo catalog; pass data_dir=<folder holding {name}/raw/>"
        )
    root = Path(data_dir).expanduser()
    if not (root / name / "raw").is_dir():
        raise DatasetNotFoundError(f"{family} dataset {name!r}: no raw files under data_dir={str(root)!r}/{name}/raw")
    return root


def _raw_folder(path: str, key: str) -> Path:
    folder = Path(path).expanduser()
    if not folder.is_dir():
        raise DatasetNotFoundError(f"{key}={path!r} is not a folder")
    return folder / "raw" if (folder / "raw").is_dir() else folder


def _pick_name(found: list[str], name: str | None, path: str, layout: str) -> str:
    """The one dataset name among ``found`` in a user folder (``name`` chooses when there are several)."""
    if len(found) == 1:
        return found[0]
    lowered = {f.lower(): f for f in found}
    if name is not None and name.lower() in lowered:
        return lowered[name.lower()]
    if not found:
        raise DatasetNotFoundError(f"path={path!r} holds no {layout} files")
    raise ConfigError(f"path={path!r} holds several datasets ({', '.join(sorted(found))}); set name to one of them")


def user_pyg_root(family: str, name: str, files: dict[str, Path]) -> Path:
    """A writable PyG root for a user's raw files (link name -> file): ``<cache>/user/<family>/<digest>/<name>/raw/``
    of symlinks; the digest is over the files' contents, so an edited file never reuses a stale ``processed/``. A link
    left by a copy of the same files elsewhere is pointed at these files (its target may have been deleted since)."""
    listing = "".join(f"{link}:{sha256_of(f)};" for link, f in sorted(files.items()))
    root = cache_dir() / "user" / family / hashlib.sha256(listing.encode()).hexdigest()[:16]
    raw = root / name / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    for link_name, f in files.items():
        link = raw / link_name
        if link.is_symlink() and link.resolve() != f.resolve():
            link.unlink()
        if not link.is_symlink():
            link.symlink_to(f.resolve())
    return root


def planetoid_user_files(path: str, name: str | None) -> tuple[str, dict[str, Path]]:
    """(dataset name, PyG's file name -> file) of a Planetoid-layout folder; the name comes from the files (PyG
    reads ``ind.<name lower-cased>.*``)."""
    folder = _raw_folder(path, "path")
    found = sorted({m.group(1) for f in folder.iterdir() if (m := re.fullmatch(r"ind\.(.+)\.allx", f.name))})
    dataset = _pick_name(found, name, path, "Planetoid ind.<name>.allx")
    files = [folder / f"ind.{dataset}.{part}" for part in PLANETOID_PARTS]
    missing = [f.name for f in files if not f.is_file()]
    if missing:
        raise DatasetNotFoundError(f"path={path!r}: Planetoid dataset {dataset!r} lacks {', '.join(missing)}")
    check_planetoid_features(files)
    return dataset, {f"ind.{dataset.lower()}.{part}": f for part, f in zip(PLANETOID_PARTS, files)}


def check_planetoid_features(files: list[Path]) -> None:
    """``ConfigError`` (file, column, row) for a NaN / inf in the feature matrices ``x``, ``tx``, ``allx``."""
    for f in files:
        if f.suffix in (".x", ".tx", ".allx"):
            fix = "every node needs finite features (rows counted from 0, columns from 1); fix the file"
            require_finite(planetoid_matrix(f), f, rows="row", first_row=0, fix=fix)


def planetoid_matrix(path: Path) -> np.ndarray:
    """A Planetoid feature pickle (numpy array or scipy sparse matrix, as PyG reads it) as a dense array;
    ``ConfigError`` naming the file when it is not one."""
    try:
        with open(path, "rb") as fh:
            matrix = pickle.load(fh, encoding="latin1")
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, ImportError, IndexError) as err:
        raise ConfigError(f"{path}: not a readable Planetoid feature pickle ({type(err).__name__}: {err})") from None
    dense = np.asarray(matrix.todense() if hasattr(matrix, "todense") else matrix)
    if dense.ndim != 2 or dense.dtype.kind not in "biuf":
        raise ConfigError(f"{path}: expected a 2-D numeric matrix (nodes, features), got {dense.dtype} {dense.shape}")
    return dense


def tu_user_files(path: str, name: str | None) -> tuple[str, dict[str, Path]]:
    """(dataset name, file name -> file) of a TU-layout folder; the name comes from ``<NAME>_A.txt``. The files
    are checked (:func:`~zoo_tasks.graphs.tu_files.check_tu_files`) before PyG sees them."""
    folder = _raw_folder(path, "path")
    found = sorted(f.name[: -len("_A.txt")] for f in folder.glob("*_A.txt"))
    dataset = _pick_name(found, name, path, "TU <NAME>_A.txt")
    missing = [f"{dataset}_{part}.txt" for part in TU_REQUIRED if not (folder / f"{dataset}_{part}.txt").is_file()]
    if missing:
        raise DatasetNotFoundError(f"path={path!r}: TU dataset {dataset!r} lacks {', '.join(missing)}")
    files = {f.name: f for f in sorted(folder.glob(f"{dataset}_*.txt"))}
    check_tu_files(dataset, files)
    return dataset, files


def raw_sha256(root: Path, name: str) -> dict[str, str]:
    """File name -> sha256 of every raw file of dataset ``name`` under a PyG ``root`` (symlinks followed)."""
    raw = root / name / "raw"
    return {f.name: sha256_of(f.resolve()) for f in sorted(raw.iterdir()) if f.is_file()}


class PlanetoidDataModule(pl.LightningDataModule):
    """A Planetoid citation graph (Yang et al., ICML 2016, arXiv:1603.08861) for transductive node classification.

    One full-batch graph: ``x`` (N, F), ``edge_index`` (2, m), ``edge_index_2hop`` (2, m2), ``y`` (N,) and the
    public split masks (20 labels per class for training, 500 validation, 1000 test nodes, as in GCN/GAT). Every
    loader yields that one graph; the LightningModule picks ``train_mask`` / ``val_mask`` / ``test_mask`` by
    stage.

    Args:
        name: ``"Cora"`` (in the zoo mirror), or any Planetoid-format dataset under ``data_dir``.
        data_dir: explicit dataset folder (holding ``<name>/raw/ind.<name>.*``); default: zoo resolution.
        path: a user's dataset: a folder (or its ``raw/``) holding ``ind.<name>.{x,tx,allx,y,ty,ally,graph,
            test.index}`` (Planetoid's own files), any name; read as is, no catalogue lookup or checksum.
        split: PyG Planetoid split, ``"public"`` by default.
        normalize_features: row-normalise bag-of-words features (as in GCN/GAT).
    """

    catalogue_fields = {"name": "ind.*.allx"}  # with `path`: the name in the files (zoo.cli.dataset_name)

    def __init__(
        self,
        name: str = "Cora",
        data_dir: str | None = None,
        split: str = "public",
        normalize_features: bool = True,
        path: str | None = None,
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.name, self.data_dir, self.split, self.path = name, data_dir, split, path
        self.normalize_features = normalize_features
        self.data = None
        self._root: Path | None = None

    def prepare_data(self) -> None:
        self._dataset()

    def root(self) -> Path:
        """The writable PyG root; with ``path``, ``name`` becomes the dataset name found in the folder."""
        if self._root is None:
            if self.path is not None:
                self.name, files = planetoid_user_files(self.path, self.name)
                self._root = user_pyg_root("Planetoid", self.name, files)
            else:
                self._root = pyg_root("Planetoid", self.name, self.data_dir)
        return self._root

    def _dataset(self) -> Planetoid:
        from torch_geometric.transforms import Compose, NormalizeFeatures

        transform = Compose([*([NormalizeFeatures()] if self.normalize_features else []), AddTwoHopEdges()])
        return open_pyg_dataset(
            "Planetoid",
            self.name,
            self.root,
            lambda root: Planetoid(str(root), self.name, split=self.split, transform=transform),
        )

    def model_shapes(self) -> dict[str, int]:
        """``{"in_dim": F, "num_classes": C}`` of the graph (PyG's processed tensors, without the transforms)."""
        data = self._dataset()._data
        return {"in_dim": int(data.x.shape[1]), "num_classes": int(data.y.max()) + 1}

    def data_sha256(self) -> dict[str, str]:
        """File name -> sha256 of each raw file read."""
        return raw_sha256(self.root(), self.name)

    def setup(self, stage: str | None = None) -> None:
        if self.data is None:
            dataset = self._dataset()
            self.data = dataset[0]
            self.num_features, self.num_classes = dataset.num_features, dataset.num_classes

    def _loader(self) -> DataLoader:
        self.setup()
        return DataLoader([self.data], batch_size=1, shuffle=False)

    def train_dataloader(self) -> DataLoader:
        return self._loader()

    def val_dataloader(self) -> DataLoader:
        return self._loader()

    def test_dataloader(self) -> DataLoader:
        return self._loader()


class TUDataModule(pl.LightningDataModule):
    """A TUDataset graph-classification benchmark (Morris et al., 2020, arXiv:2007.08663) with stratified k-fold CV.

    Fold ``fold`` of ``num_folds`` (``zoo.utils.folds.stratified_fold``, shuffled with ``split_seed``) is
    the test set; the remaining graphs are split again, stratified, into train and a ``val_ratio`` validation set
    used for model selection (Errica et al., ICLR 2020, arXiv:1912.09893), so training never sees the test fold.
    Node features (``node_features``, :class:`~zoo_tasks.graphs.features.NodeFeatures`): ``"auto"`` uses the
    dataset's continuous node attributes (``use_node_attr``, e.g. ENZYMES' 18 and PROTEINS' 1) concatenated with
    its one-hot node labels, and falls back to one-hot degrees for a dataset with neither (GIN's treatment);
    ``"degree"`` forces one-hot degrees, ``"constant"`` a single 1 per node. Batches are PyG ``Batch`` objects
    with ``x`` (N, F), ``edge_index``, ``edge_index_2hop``, ``batch`` (N,) and ``y`` (B,).

    Args:
        name: ``"MUTAG"``, ``"PROTEINS"``, ``"ENZYMES"``, ``"PTC_MR"`` or any TU-format dataset under ``data_dir``.
        path: a user's dataset: a folder (or its ``raw/``) holding ``<NAME>_A.txt``, ``<NAME>_graph_indicator.txt``,
            ``<NAME>_graph_labels.txt`` and optionally ``<NAME>_node_labels.txt`` / ``_node_attributes.txt`` (the
            TU raw layout), any name; read as is, no catalogue lookup or checksum.
        fold, num_folds: which of the stratified folds is the test fold.
        split_seed: shuffling seed of the fold assignment (fixed across methods so every method sees the same
            folds).
        node_features, max_degree: see above; ``max_degree`` caps the one-hot degree (None: the dataset's
            largest degree, one column per degree as in GIN's code).
    """

    catalogue_fields = {"name": "*_A.txt"}  # with `path`: the <NAME> of its files (zoo.cli.dataset_name)

    def __init__(
        self,
        name: str = "MUTAG",
        data_dir: str | None = None,
        fold: int = 0,
        num_folds: int = 10,
        val_ratio: float = 0.1,
        batch_size: int = 32,
        split_seed: int = 12345,
        use_node_attr: bool = True,
        num_workers: int = 0,
        path: str | None = None,
        node_features: str = "auto",
        max_degree: int | None = None,
    ) -> None:
        super().__init__()
        check_choice("node_features", node_features, NODE_FEATURES)
        if max_degree is not None and max_degree < 0:
            raise ConfigError(f"max_degree={max_degree} is not valid; use None (the dataset's largest) or >= 0")
        if not 0 <= fold < num_folds:
            raise ConfigError(f"fold={fold} is not valid; choose from 0 .. num_folds-1 = {num_folds - 1}")
        if not 0.0 < val_ratio < 1.0:
            raise ConfigError(f"val_ratio={val_ratio} is not valid; it must be in (0, 1)")
        self.save_hyperparameters()
        self.name, self.data_dir, self.fold, self.num_folds = name, data_dir, fold, num_folds
        self.val_ratio, self.batch_size, self.split_seed = val_ratio, batch_size, split_seed
        self.use_node_attr, self.num_workers, self.path = use_node_attr, num_workers, path
        self.node_features, self.max_degree = node_features, max_degree
        self.dataset = None
        self._root: Path | None = None
        self._features: NodeFeatures | None = None

    def prepare_data(self) -> None:
        self._dataset()

    def root(self) -> Path:
        """The writable PyG root; with ``path``, ``name`` becomes the dataset name found in the folder."""
        if self._root is None:
            if self.path is not None:
                self.name, files = tu_user_files(self.path, self.name)
                self._root = user_pyg_root("TUDataset", self.name, files)
            else:
                self._root = pyg_root("TUDataset", self.name, self.data_dir)
                if not catalogued("TUDataset", self.name):  # a user's files under data_dir: checked as with path
                    tu_user_files(str(self._root / self.name / "raw"), self.name)
        return self._root

    def _dataset(self) -> TUDataset:
        return open_pyg_dataset(
            "TUDataset",
            self.name,
            self.root,
            lambda root: TUDataset(str(root), self.name, use_node_attr=self.use_node_attr),
        )

    def features(self) -> NodeFeatures:
        """The node-feature rule fitted to the whole dataset (its width is the model's ``in_dim``)."""
        if self._features is None:
            self._features = NodeFeatures.fit(self._dataset(), self.node_features, self.max_degree)
        return self._features

    def model_shapes(self) -> dict[str, int]:
        """``{"in_dim": node-feature width, "num_classes": C}`` (PyG's processed tensors; no graph is transformed)."""
        return {"in_dim": self.features().width, "num_classes": int(self._dataset()._data.y.max()) + 1}

    def data_sha256(self) -> dict[str, str]:
        """File name -> sha256 of each raw file read."""
        return raw_sha256(self.root(), self.name)

    def fold_indices(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(train, val, test) graph indices of this fold; the test folds of all k folds partition the dataset."""
        self.setup()
        y = self.labels
        rest, test = stratified_fold(y, self.fold, self.num_folds, self.split_seed)
        train, val = train_test_split(
            rest, test_size=self.val_ratio, stratify=y[rest], random_state=self.split_seed + self.fold
        )
        return np.sort(train), np.sort(val), np.sort(test)

    def setup(self, stage: str | None = None) -> None:
        if self.dataset is None:
            dataset = self._dataset()
            features = self.features()
            self.num_features, self.num_classes = features.width, dataset.num_classes
            self.labels = dataset.y.numpy()
            add_two_hop = AddTwoHopEdges()
            self.dataset = [add_two_hop(features(graph)) for graph in dataset]  # once, not every epoch

    def _loader(self, idx: np.ndarray, shuffle: bool) -> DataLoader:
        return DataLoader(
            [self.dataset[i] for i in idx], batch_size=self.batch_size, shuffle=shuffle, num_workers=self.num_workers
        )

    def train_dataloader(self) -> DataLoader:
        return self._loader(self.fold_indices()[0], shuffle=True)

    def val_dataloader(self) -> DataLoader:
        return self._loader(self.fold_indices()[1], shuffle=False)

    def test_dataloader(self) -> DataLoader:
        return self._loader(self.fold_indices()[2], shuffle=False)
