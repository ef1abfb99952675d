"""Bag datamodules for binary multiple-instance learning, with stratified K-fold cross-validation over bags.

A bag is a float array (n_i, D) of instance features with one 0/1 label. Every datamodule yields padded
batches ``{"x": (B, N, D), "mask": (B, N) bool, "y": (B,) float, "instance_labels": (B, N) long}``
(instance labels are -1 where unknown or padding). The classic benchmarks (MUSK1, Elephant) have no official
split: the literature reports bag accuracy from 10-fold cross-validation repeated 5 times (Ilse et al. 2018).
Here ``fold`` selects the test fold of ``StratifiedKFold(num_folds, shuffle=True, random_state=repeat)``;
``repeat=None`` uses the run's global seed (``seed_everything`` sets ``PL_GLOBAL_SEED``), so
``zoo reproduce`` seeds 0..4 are the 5 repeats. Features are standardised with the training folds' statistics.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytorch_lightning as pl
import torch
from sklearn.model_selection import StratifiedKFold
from torch.utils.data import DataLoader

from zoo.data import resolve
from zoo.errors import ConfigError


@dataclass
class Bags:
    """A MIL dataset: ``features[i]`` (n_i, D) float32, ``labels`` (num_bags,) int in {0, 1},
    ``instance_labels[i]`` (n_i,) int or None, ``names`` the bag ids in file order."""

    features: list[np.ndarray]
    labels: np.ndarray
    names: list[str]
    instance_labels: list[np.ndarray] | None = None

    def __post_init__(self) -> None:
        if len(self.features) != len(self.labels) or len(self.names) != len(self.labels):
            raise ValueError("Bags: features, labels and names must have one entry per bag")
        if not set(np.unique(self.labels).tolist()) <= {0, 1}:
            raise ValueError(f"Bags: labels must be 0/1, got values {sorted(set(self.labels.tolist()))}")
        if any(len(f) == 0 for f in self.features):
            raise ValueError("Bags: every bag needs at least one instance")


def group_instances(features: np.ndarray, bag_ids: np.ndarray, labels: np.ndarray) -> Bags:
    """Group instance rows into bags by ``bag_ids`` (order of first appearance).

    ``labels`` is either per instance (N,) and then constant inside each bag (each instance carries its bag's
    label, as in MUSK1 / Elephant), or per bag (num_bags,) aligned with the bags' order of first appearance.
    """
    features = np.asarray(features, dtype=np.float32)
    bag_ids = np.asarray(bag_ids).reshape(-1)
    labels = np.asarray(labels).reshape(-1)
    if features.ndim != 2 or len(features) != len(bag_ids):
        raise ValueError(f"features must be (N, D) with N = len(bag_ids); got {features.shape} and {len(bag_ids)}")
    names, first, inverse = np.unique(bag_ids, return_index=True, return_inverse=True)
    order = np.argsort(first)
    groups = [np.flatnonzero(inverse == k) for k in order]
    if len(labels) == len(bag_ids):
        bag_labels = []
        for k, rows in zip(order, groups):
            values = np.unique(labels[rows])
            if len(values) != 1:
                raise ValueError(f"bag {names[k]!r} has instances with different labels {values.tolist()}")
            bag_labels.append(values[0])
        bag_labels = np.asarray(bag_labels)
    elif len(labels) == len(groups):
        bag_labels = labels
    else:
        raise ValueError(f"labels must have one entry per instance ({len(bag_ids)}) or per bag ({len(groups)})")
    return Bags([features[rows] for rows in groups], bag_labels.astype(np.int64), [str(names[k]) for k in order])


def cv_split(labels: np.ndarray, fold: int, num_folds: int, repeat: int) -> tuple[np.ndarray, np.ndarray]:
    """(train, test) bag indices of ``fold`` in stratified ``num_folds``-fold CV shuffled with seed ``repeat``."""
    if not 0 <= fold < num_folds:
        raise ConfigError(f"fold must be in [0, {num_folds}), got {fold}")
    splitter = StratifiedKFold(n_splits=num_folds, shuffle=True, random_state=repeat)
    return list(splitter.split(np.zeros(len(labels)), labels))[fold]


def collate_bags(items: list[tuple[np.ndarray, int, np.ndarray | None]]) -> dict[str, torch.Tensor]:
    """Pad a list of (features (n_i, D), label, instance labels or None) to one batch dict."""
    b, n, d = len(items), max(len(f) for f, _, _ in items), items[0][0].shape[1]
    x = torch.zeros(b, n, d)
    mask = torch.zeros(b, n, dtype=torch.bool)
    instance_labels = torch.full((b, n), -1, dtype=torch.long)
    for i, (feats, _, inst) in enumerate(items):
        x[i, : len(feats)] = torch.from_numpy(feats)
        mask[i, : len(feats)] = True
        if inst is not None:
            instance_labels[i, : len(feats)] = torch.from_numpy(inst)
    y = torch.tensor([label for _, label, _ in items], dtype=torch.float32)
    return {"x": x, "mask": mask, "y": y, "instance_labels": instance_labels}


class BagDataModule(pl.LightningDataModule):
    """Base class: cross-validation over the bags returned by :meth:`load_bags`, standardisation, padded batches.

    Args:
        data_dir: explicit dataset folder (else ``zoo.data.resolve`` looks in $ZOO_DATA_DIR / $ZOO_DATA_MIRROR).
        fold: test fold index in ``[0, num_folds)``.
        num_folds: number of stratified CV folds over bags.
        repeat: shuffle seed of the CV split; None uses the global seed (``PL_GLOBAL_SEED``, else 0).
        batch_size: bags per training batch (bags are padded; models mask the padding).
        standardize: z-score features with the training bags' instance mean/std.
    """

    def __init__(
        self,
        data_dir: str | None = None,
        fold: int = 0,
        num_folds: int = 10,
        repeat: int | None = None,
        batch_size: int = 8,
        standardize: bool = True,
    ) -> None:
        super().__init__()
        if num_folds < 2:
            raise ConfigError(f"num_folds must be >= 2, got {num_folds}")
        if batch_size < 1:
            raise ConfigError(f"batch_size must be >= 1, got {batch_size}")
        self.data_dir, self.fold, self.num_folds = data_dir, fold, num_folds
        self.repeat, self.batch_size, self.standardize = repeat, batch_size, standardize
        self.bags: Bags | None = None
        self.train_idx = self.test_idx = None

    def load_bags(self) -> Bags:
        raise NotImplementedError

    @property
    def cv_seed(self) -> int:
        return self.repeat if self.repeat is not None else int(os.environ.get("PL_GLOBAL_SEED", 0))

    def setup(self, stage: str | None = None) -> None:
        if self.bags is not None:
            return
        bags = self.load_bags()
        self.train_idx, self.test_idx = cv_split(bags.labels, self.fold, self.num_folds, self.cv_seed)
        if self.standardize:
            train = np.concatenate([bags.features[i] for i in self.train_idx])
            mean, std = train.mean(0), train.std(0)
            std[std < 1e-8] = 1.0  # constant features stay 0 instead of dividing by zero
            bags.features = [((f - mean) / std).astype(np.float32) for f in bags.features]
        self.bags = bags

    @property
    def in_dim(self) -> int:
        self.setup()
        return self.bags.features[0].shape[1]

    def _items(self, indices: np.ndarray) -> list[tuple[np.ndarray, int, np.ndarray | None]]:
        inst = self.bags.instance_labels
        return [(self.bags.features[i], int(self.bags.labels[i]), None if inst is None else inst[i]) for i in indices]

    def train_dataloader(self) -> DataLoader:
        return DataLoader(self._items(self.train_idx), self.batch_size, shuffle=True, collate_fn=collate_bags)

    def test_dataloader(self) -> DataLoader:
        return DataLoader(self._items(self.test_idx), self.batch_size, shuffle=False, collate_fn=collate_bags)


class MUSK1DataModule(BagDataModule):
    """MUSK1 (Dietterich et al., Artificial Intelligence 1997): 92 molecules (bags; 47 musk) of 476 conformations
    (instances) with 166 integer features; read from UCI ``clean1.data`` (bag = molecule_name)."""

    def load_bags(self) -> Bags:
        root = resolve("MIL", path=self.data_dir, files=["MUSK1/clean1.data"])
        rows = [line.split(",") for line in (root / "MUSK1" / "clean1.data").read_text().splitlines() if line]
        if any(len(r) != 169 for r in rows):
            raise ValueError("clean1.data: expected 169 comma-separated columns per row")
        features = np.array([r[2:168] for r in rows], dtype=np.float32)
        labels = np.array([float(r[168]) for r in rows]).astype(np.int64)
        return group_instances(features, np.array([r[0] for r in rows]), labels)


class ElephantDataModule(BagDataModule):
    """Elephant (Andrews, Tsochantaridis & Hofmann, NIPS 2002): 200 Corel images (bags; 100 positive) of 1,391
    segments (instances) with 230 features; read from the MIL-toolbox ``elephant.mat``."""

    def load_bags(self) -> Bags:
        from scipy.io import loadmat

        root = resolve("MIL", path=self.data_dir, files=["Elephant/elephant.mat"])
        x = loadmat(root / "Elephant" / "elephant.mat")["x"][0, 0]
        labels = x["nlab"].ravel().astype(np.int64) - 1
        bag_ids = x["ident"][0, 0]["milbag"].ravel()
        return group_instances(np.asarray(x["data"], dtype=np.float32), bag_ids, labels)


class DigitsBagsDataModule(BagDataModule):
    """Digit bags after MNIST-bags (Ilse et al., ICML 2018, Sec. 5.2) from scikit-learn's 8x8 digits (1,797 images).

    A bag holds ``bag_size ~ round(N(mean_bag_size, std_bag_size))`` (at least 2) images, flattened to 64
    features in [0, 1]; it is positive iff it contains a ``target_digit``. Bags are built once from
    ``bag_seed`` (independent of the CV repeat), half of them positive, and every image is used in at most one
    bag, so no image is shared between a training and a test fold. Instance labels are the digit classes.
    """

    def __init__(
        self,
        num_bags: int = 150,
        mean_bag_size: float = 10.0,
        std_bag_size: float = 2.0,
        target_digit: int = 9,
        bag_seed: int = 0,
        fold: int = 0,
        num_folds: int = 10,
        repeat: int | None = None,
        batch_size: int = 8,
        standardize: bool = False,
    ) -> None:
        super().__init__(None, fold, num_folds, repeat, batch_size, standardize)
        self.num_bags, self.mean_bag_size, self.std_bag_size = num_bags, mean_bag_size, std_bag_size
        self.target_digit, self.bag_seed = target_digit, bag_seed

    def load_bags(self) -> Bags:
        from sklearn.datasets import load_digits

        digits = load_digits()
        images, classes = (digits.data / 16.0).astype(np.float32), digits.target.astype(np.int64)
        rng = np.random.default_rng(self.bag_seed)
        targets = list(rng.permutation(np.flatnonzero(classes == self.target_digit)))
        others = list(rng.permutation(np.flatnonzero(classes != self.target_digit)))
        sizes = np.maximum(2, np.round(rng.normal(self.mean_bag_size, self.std_bag_size, self.num_bags))).astype(int)
        labels = rng.permutation(np.arange(self.num_bags) % 2)
        features, instance_labels = [], []
        for size, label in zip(sizes, labels):
            n_target = 1 + rng.binomial(size - 1, 0.1) if label else 0
            if n_target > len(targets) or size - n_target > len(others):
                raise ConfigError(f"not enough digit images for {self.num_bags} bags of mean size {self.mean_bag_size}")
            members = np.array(
                [targets.pop() for _ in range(n_target)] + [others.pop() for _ in range(size - n_target)]
            )
            members = rng.permutation(members)
            features.append(images[members])
            instance_labels.append(classes[members])
        names = [f"bag{i}" for i in range(self.num_bags)]
        return Bags(features, labels.astype(np.int64), names, instance_labels)


class FeatureBagsDataModule(BagDataModule):
    """Bring-your-own instance features (e.g. pre-extracted pathology patch embeddings) from CSV, NPZ or HDF5.

    - ``.npz`` / ``.h5`` / ``.hdf5``: arrays ``features`` (N, D), ``bag_ids`` (N,) and ``labels`` given per
      instance (N,) or per bag (in order of first appearance of each bag id).
    - ``.csv``: a header row with columns ``bag_ids`` and ``labels`` (per instance); every other column is a
      numeric feature.
    Array / column names can be changed with ``features_key``, ``bag_key`` and ``label_key``.
    """

    def __init__(
        self,
        path: str,
        features_key: str = "features",
        bag_key: str = "bag_ids",
        label_key: str = "labels",
        fold: int = 0,
        num_folds: int = 10,
        repeat: int | None = None,
        batch_size: int = 8,
        standardize: bool = True,
    ) -> None:
        super().__init__(None, fold, num_folds, repeat, batch_size, standardize)
        self.path = Path(path).expanduser()
        self.features_key, self.bag_key, self.label_key = features_key, bag_key, label_key

    def load_bags(self) -> Bags:
        if not self.path.is_file():
            raise ConfigError(f"FeatureBagsDataModule: no file at {self.path}")
        suffix = self.path.suffix.lower()
        if suffix == ".csv":
            import pandas as pd

            frame = pd.read_csv(self.path)
            missing = {self.bag_key, self.label_key} - set(frame.columns)
            if missing:
                raise ConfigError(f"{self.path}: missing column(s) {sorted(missing)}; found {list(frame.columns)}")
            feats = frame.drop(columns=[self.bag_key, self.label_key]).to_numpy(np.float32)
            return group_instances(feats, frame[self.bag_key].to_numpy(), frame[self.label_key].to_numpy())
        if suffix == ".npz":
            with np.load(self.path, allow_pickle=False) as arrays:
                data = {k: arrays[k] for k in arrays.files}
        elif suffix in (".h5", ".hdf5"):
            import h5py

            with h5py.File(self.path, "r") as fh:
                data = {k: fh[k][()] for k in fh.keys() if isinstance(fh[k], h5py.Dataset)}
        else:
            raise ConfigError(f"FeatureBagsDataModule: unsupported file type {suffix!r} (use .csv, .npz, .h5)")
        missing = {self.features_key, self.bag_key, self.label_key} - set(data)
        if missing:
            raise ConfigError(f"{self.path}: missing array(s) {sorted(missing)}; found {sorted(data)}")
        bag_ids = data[self.bag_key]
        if bag_ids.dtype.kind == "S":
            bag_ids = bag_ids.astype(str)
        return group_instances(data[self.features_key], bag_ids, data[self.label_key])
