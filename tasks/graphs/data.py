"""Datamodules: Planetoid node classification (public split) and TU graph classification (stratified k-fold).

Both read the raw files through ``zoo.data`` (sha256-verified, offline mirror first) and hand PyG a writable
copy, so PyG's ``processed/`` never lands in the read-only mirror. A dataset outside the zoo catalog (e.g. a
user's own CiteSeer or any TU-format ``NAME/raw/NAME_*.txt`` folder) is used directly from ``data_dir``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytorch_lightning as pl
from sklearn.model_selection import train_test_split
from torch_geometric.datasets import Planetoid, TUDataset
from torch_geometric.loader import DataLoader

from zoo.data import get_dataset_spec, writable_copy
from zoo.errors import ConfigError, DatasetNotFoundError
from zoo.utils.folds import stratified_fold
from zoo_tasks.graphs.experts import AddTwoHopEdges


def pyg_root(family: str, name: str, data_dir: str | None) -> Path:
    """Root folder for a PyG dataset class: a writable copy for catalogued datasets, else ``data_dir``."""
    known = any(rel.startswith(f"{name}/raw/") for rel in get_dataset_spec(family).checksums)
    if known:
        return writable_copy(family, path=data_dir, files=[f"{name}/raw"])
    if data_dir is None:
        raise DatasetNotFoundError(
            f"{family} dataset name={name!r} is not in the zoo catalog; pass data_dir=<folder holding {name}/raw/>"
        )
    root = Path(data_dir).expanduser()
    if not (root / name / "raw").is_dir():
        raise DatasetNotFoundError(f"{family} dataset {name!r}: no raw files under data_dir={str(root)!r}/{name}/raw")
    return root


class PlanetoidDataModule(pl.LightningDataModule):
    """A Planetoid citation graph (Yang et al., ICML 2016, arXiv:1603.08861) for transductive node classification.

    One full-batch graph: ``x`` (N, F), ``edge_index`` (2, m), ``edge_index_2hop`` (2, m2), ``y`` (N,) and the
    public split masks (20 labels per class for training, 500 validation, 1000 test nodes, as in GCN/GAT). Every
    loader yields that one graph; the LightningModule picks ``train_mask`` / ``val_mask`` / ``test_mask`` by
    stage.

    Args:
        name: ``"Cora"`` (in the zoo mirror), or any Planetoid-format dataset under ``data_dir``.
        data_dir: explicit dataset folder (holding ``<name>/raw/ind.<name>.*``); default: zoo resolution.
        split: PyG Planetoid split, ``"public"`` by default.
        normalize_features: row-normalise bag-of-words features (as in GCN/GAT).
    """

    def __init__(
        self, name: str = "Cora", data_dir: str | None = None, split: str = "public", normalize_features: bool = True
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.name, self.data_dir, self.split = name, data_dir, split
        self.normalize_features = normalize_features
        self.data = None

    def prepare_data(self) -> None:
        self._dataset()

    def _dataset(self) -> Planetoid:
        from torch_geometric.transforms import Compose, NormalizeFeatures

        steps = [NormalizeFeatures()] if self.normalize_features else []
        root = pyg_root("Planetoid", self.name, self.data_dir)
        return Planetoid(str(root), self.name, split=self.split, transform=Compose([*steps, AddTwoHopEdges()]))

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
    Node features: one-hot node labels, concatenated with continuous node attributes when present
    (``use_node_attr``, e.g. ENZYMES' 18 and PROTEINS' 1). Batches are PyG ``Batch`` objects with
    ``x`` (N, F), ``edge_index``, ``edge_index_2hop``, ``batch`` (N,) and ``y`` (B,).

    Args:
        name: ``"MUTAG"``, ``"PROTEINS"``, ``"ENZYMES"``, ``"PTC_MR"`` or any TU-format dataset under ``data_dir``.
        fold, num_folds: which of the stratified folds is the test fold.
        split_seed: shuffling seed of the fold assignment (fixed across methods so every method sees the same
            folds).
    """

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
    ) -> None:
        super().__init__()
        if not 0 <= fold < num_folds:
            raise ConfigError(f"fold={fold} is not valid; choose from 0 .. num_folds-1 = {num_folds - 1}")
        if not 0.0 < val_ratio < 1.0:
            raise ConfigError(f"val_ratio={val_ratio} is not valid; it must be in (0, 1)")
        self.save_hyperparameters()
        self.name, self.data_dir, self.fold, self.num_folds = name, data_dir, fold, num_folds
        self.val_ratio, self.batch_size, self.split_seed = val_ratio, batch_size, split_seed
        self.use_node_attr, self.num_workers = use_node_attr, num_workers
        self.dataset = None

    def prepare_data(self) -> None:
        self._dataset()

    def _dataset(self) -> TUDataset:
        root = pyg_root("TUDataset", self.name, self.data_dir)
        return TUDataset(str(root), self.name, use_node_attr=self.use_node_attr)

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
            if dataset.num_features == 0:
                raise ConfigError(f"TU dataset name={self.name!r} has no node labels or attributes to use as features")
            self.num_features, self.num_classes = dataset.num_features, dataset.num_classes
            self.labels = dataset.y.numpy()
            add_two_hop = AddTwoHopEdges()
            self.dataset = [add_two_hop(graph) for graph in dataset]  # once, not every epoch

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
