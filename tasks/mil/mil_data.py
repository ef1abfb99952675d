"""Bag datamodules for binary multiple-instance learning, with stratified K-fold cross-validation over bags.

A bag is a float array (n_i, D) of instance features with one 0/1 label. Every datamodule yields padded
batches ``{"x": (B, N, D), "mask": (B, N) bool, "y": (B,) float, "instance_labels": (B, N) long}``
(instance labels are -1 where unknown or padding). The classic benchmarks (MUSK1, Elephant) have no official
split: the literature reports bag accuracy from 10-fold cross-validation repeated 5 times (Ilse et al. 2018).
Here ``fold`` selects the test fold of :func:`zoo.utils.folds.stratified_fold` (``StratifiedKFold(num_folds,
shuffle=True, random_state=repeat)``); ``repeat=None`` uses the run's global seed (``seed_everything`` sets
``PL_GLOBAL_SEED``), so ``zoo reproduce`` seeds 0..4 are the 5 repeats. Features are standardised with the
training folds' statistics.

Bad input (labels outside {0, 1}, mixed labels inside a bag, NaN / inf features, an unreadable file) raises
:class:`zoo.errors.ZooError` / ``ConfigError`` with one line naming the file and the array or column.
"""

from __future__ import annotations

import os
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytorch_lightning as pl
import torch
from torch.utils.data import DataLoader

from zoo.data import resolve
from zoo.errors import ConfigError, ZooError
from zoo.utils.folds import stratified_fold


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
            raise ZooError("Bags: features, labels and names must have one entry per bag")
        _check_binary(self.labels)
        if any(len(f) == 0 for f in self.features):
            raise ZooError("Bags: every bag needs at least one instance")
        widths = {f.shape[1] for f in self.features}
        if len(widths) > 1:
            raise ZooError(f"Bags: every instance needs the same number of features, got widths {sorted(widths)}")
        bad = [name for name, f in zip(self.names, self.features) if not np.isfinite(f).all()]
        if bad:
            raise ZooError(f"{len(bad)} bag(s) have NaN or infinite features (first: bag {bad[0]!r}); clean the input")


def _check_binary(labels: np.ndarray) -> None:
    values = np.unique(np.asarray(labels))
    if not set(values.tolist()) <= {0, 1}:
        shown = ", ".join(str(v) for v in values[:6]) + (", ..." if len(values) > 6 else "")
        raise ZooError(f"labels must be 0 or 1 (binary MIL), got values {shown}")


def group_instances(features: np.ndarray, bag_ids: np.ndarray, labels: np.ndarray) -> Bags:
    """Group instance rows into bags by ``bag_ids`` (order of first appearance).

    ``labels`` is either per instance (N,) and then constant inside each bag (each instance carries its bag's
    label, as in MUSK1 / Elephant), or per bag (num_bags,) aligned with the bags' order of first appearance.
    """
    features = np.asarray(features, dtype=np.float32)
    bag_ids = np.asarray(bag_ids).reshape(-1)
    labels = np.asarray(labels).reshape(-1)
    if features.ndim != 2 or len(features) != len(bag_ids):
        raise ZooError(f"features must be (N, D) with N = len(bag_ids); got {features.shape} and {len(bag_ids)}")
    _check_binary(labels)
    names, first, inverse = np.unique(bag_ids, return_index=True, return_inverse=True)
    order = np.argsort(first)
    groups = [np.flatnonzero(inverse == k) for k in order]
    if len(labels) == len(bag_ids):
        bag_labels = []
        for k, rows in zip(order, groups):
            values = np.unique(labels[rows])
            if len(values) != 1:
                raise ZooError(f"bag {names[k]!r} has instances with different labels {values.tolist()}")
            bag_labels.append(values[0])
        bag_labels = np.asarray(bag_labels)
    elif len(labels) == len(groups):
        bag_labels = labels
    else:
        raise ZooError(
            f"labels must have one entry per instance ({len(bag_ids)}) or per bag ({len(groups)}), got {len(labels)}"
        )
    return Bags([features[rows] for rows in groups], bag_labels.astype(np.int64), [str(names[k]) for k in order])


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
        self._path: Path | None = None  # the file the bags come from, once known
        self.num_val_bags = 0  # the last num_val_bags bags of load_bags() are validation bags, outside the CV
        self.val_idx = np.arange(0)

    def load_bags(self) -> Bags:
        raise NotImplementedError

    def source(self) -> str:
        """What the bags are read from, for error messages."""
        return str(self._path) if self._path is not None else type(self).__name__

    @property
    def cv_seed(self) -> int:
        return self.repeat if self.repeat is not None else int(os.environ.get("PL_GLOBAL_SEED", 0))

    def setup(self, stage: str | None = None) -> None:
        if self.bags is not None:
            return
        try:
            bags = self.load_bags()
        except ZooError as exc:
            raise type(exc)(f"{self.source()}: {exc}") from None
        num_cv = len(bags.labels) - self.num_val_bags
        self.train_idx, self.test_idx = stratified_fold(bags.labels[:num_cv], self.fold, self.num_folds, self.cv_seed)
        self.val_idx = np.arange(num_cv, len(bags.labels))
        if self.standardize:
            train = np.concatenate([bags.features[i] for i in self.train_idx])
            mean, std = train.mean(0), train.std(0)
            # Constant features stay constant instead of dividing by zero. The threshold stays 1e-8, the one the
            # records used: Elephant's constant columns get float32 round-off stds of 1e-8..1e-6 on some folds,
            # so a larger clamp would change those runs' inputs (to another constant per fold).
            std[std < 1e-8] = 1.0
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
        self._path = root / "MUSK1" / "clean1.data"
        rows = [line.split(",") for line in self._path.read_text().splitlines() if line]
        if any(len(r) != 169 for r in rows):
            raise ZooError("expected 169 comma-separated columns per row")
        features = np.array([r[2:168] for r in rows], dtype=np.float32)
        labels = np.array([float(r[168]) for r in rows]).astype(np.int64)
        return group_instances(features, np.array([r[0] for r in rows]), labels)


class ElephantDataModule(BagDataModule):
    """Elephant (Andrews, Tsochantaridis & Hofmann, NIPS 2002): 200 Corel images (bags; 100 positive) of 1,391
    segments (instances) with 230 features; read from the MIL-toolbox ``elephant.mat``."""

    def load_bags(self) -> Bags:
        from scipy.io import loadmat

        root = resolve("MIL", path=self.data_dir, files=["Elephant/elephant.mat"])
        self._path = root / "Elephant" / "elephant.mat"
        x = loadmat(self._path)["x"][0, 0]
        labels = x["nlab"].ravel().astype(np.int64) - 1
        bag_ids = x["ident"][0, 0]["milbag"].ravel()
        return group_instances(np.asarray(x["data"], dtype=np.float32), bag_ids, labels)


class DigitsBagsDataModule(BagDataModule):
    """Digit bags after MNIST-bags (Ilse et al., ICML 2018, Sec. 5.2) from scikit-learn's 8x8 digits (1,797 images).

    A bag holds ``bag_size ~ round(N(mean_bag_size, std_bag_size))`` (at least 2) images, flattened to 64
    features in [0, 1]; it is positive iff it contains a ``target_digit``. Bags are built once from
    ``bag_seed`` (independent of the CV repeat), half of them positive, and every image is used in at most one
    bag, so no image is shared between a training and a test fold. Instance labels are the digit classes.

    ``num_val_bags`` more bags are drawn the same way, after the ``num_bags`` cross-validated ones and from images
    none of them uses, as validation bags (model selection, ``val_dataloader``); the CV bags and folds do not
    depend on it. 0 (the benchmark's protocol) means no validation.
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
        num_val_bags: int = 0,
    ) -> None:
        super().__init__(None, fold, num_folds, repeat, batch_size, standardize)
        if num_bags < 2 or num_val_bags < 0:
            raise ConfigError(f"data.num_bags must be >= 2 and data.num_val_bags >= 0, got {num_bags}, {num_val_bags}")
        self.num_bags, self.mean_bag_size, self.std_bag_size = num_bags, mean_bag_size, std_bag_size
        self.target_digit, self.bag_seed, self.num_val_bags = target_digit, bag_seed, num_val_bags

    def source(self) -> str:
        return "scikit-learn digits"

    def _draw(self, rng, count: int, targets: list, others: list, images: np.ndarray, classes: np.ndarray):
        """``count`` bags (half positive) taking images off ``targets`` / ``others``: features, instance labels,
        bag labels."""
        sizes = np.maximum(2, np.round(rng.normal(self.mean_bag_size, self.std_bag_size, count))).astype(int)
        labels = rng.permutation(np.arange(count) % 2)
        features, instance_labels = [], []
        for size, label in zip(sizes, labels):
            n_target = 1 + rng.binomial(size - 1, 0.1) if label else 0
            if n_target > len(targets) or size - n_target > len(others):
                raise ConfigError(
                    f"not enough digit images for {self.num_bags} + {self.num_val_bags} bags of mean size "
                    f"{self.mean_bag_size}: lower data.num_bags / data.num_val_bags / data.mean_bag_size"
                )
            members = np.array(
                [targets.pop() for _ in range(n_target)] + [others.pop() for _ in range(size - n_target)]
            )
            members = rng.permutation(members)
            features.append(images[members])
            instance_labels.append(classes[members])
        return features, instance_labels, labels

    def load_bags(self) -> Bags:
        from sklearn.datasets import load_digits

        digits = load_digits()
        images, classes = (digits.data / 16.0).astype(np.float32), digits.target.astype(np.int64)
        rng = np.random.default_rng(self.bag_seed)
        targets = list(rng.permutation(np.flatnonzero(classes == self.target_digit)))
        others = list(rng.permutation(np.flatnonzero(classes != self.target_digit)))
        features, instance_labels, labels = self._draw(rng, self.num_bags, targets, others, images, classes)
        names = [f"bag{i}" for i in range(self.num_bags)]
        if self.num_val_bags:
            val = self._draw(rng, self.num_val_bags, targets, others, images, classes)
            features, instance_labels = features + val[0], instance_labels + val[1]
            labels = np.concatenate([labels, val[2]])
            names += [f"val{i}" for i in range(self.num_val_bags)]
        return Bags(features, labels.astype(np.int64), names, instance_labels)

    def val_dataloader(self) -> DataLoader | list:
        if not len(self.val_idx):
            return []
        return DataLoader(self._items(self.val_idx), self.batch_size, shuffle=False, collate_fn=collate_bags)


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

    def source(self) -> str:
        return str(self.path)

    def load_bags(self) -> Bags:
        if not self.path.is_file():
            raise ConfigError(f"data.path: no file at {self.path}")
        suffix = self.path.suffix.lower()
        if suffix == ".csv":
            return self._load_csv()
        if suffix == ".npz":
            data = self._load_npz()
        elif suffix in (".h5", ".hdf5"):
            data = self._load_h5()
        else:
            raise ConfigError(f"data.path: unsupported file type {suffix!r} (use .csv, .npz, .h5)")
        keys = {"features_key": self.features_key, "bag_key": self.bag_key, "label_key": self.label_key}
        for arg, key in keys.items():
            if key not in data:
                raise ConfigError(f"no array {key!r} (data.{arg}); arrays in the file: {sorted(data)}")
        feats = data[self.features_key]
        if feats.dtype.kind not in "biuf":
            raise ZooError(f"array {self.features_key!r} must be numeric, got dtype {feats.dtype}")
        bag_ids = data[self.bag_key]
        if bag_ids.dtype.kind == "S":
            bag_ids = bag_ids.astype(str)
        return group_instances(feats, bag_ids, data[self.label_key])

    def _load_csv(self) -> Bags:
        import pandas as pd

        try:
            frame = pd.read_csv(self.path)
        except (ValueError, UnicodeDecodeError, pd.errors.ParserError) as exc:
            raise ZooError(f"not a readable CSV file ({type(exc).__name__}: {str(exc).splitlines()[0]})") from None
        for arg, key in (("bag_key", self.bag_key), ("label_key", self.label_key)):
            if key not in frame.columns:
                raise ConfigError(f"no column {key!r} (data.{arg}); columns: {list(frame.columns)[:10]}")
        feats = frame.drop(columns=[self.bag_key, self.label_key])
        text = [c for c in feats.columns if not pd.api.types.is_numeric_dtype(feats[c])]
        if text:
            raise ZooError(f"feature column(s) {text[:5]} are not numeric")
        return group_instances(feats.to_numpy(np.float32), frame[self.bag_key].to_numpy(), frame[self.label_key])

    def _load_npz(self) -> dict[str, np.ndarray]:
        with open(self.path, "rb") as fh:
            if fh.read(4) != b"PK\x03\x04":  # else numpy would try to unpickle it and suggest allow_pickle=True
                raise ZooError("not a readable .npz file (not a zip archive of .npy arrays)")
        try:
            with np.load(self.path, allow_pickle=False) as arrays:
                return {k: arrays[k] for k in arrays.files}
        except ValueError as exc:  # numpy's message here proposes allow_pickle=True: never load pickles from data
            if "pickle" in str(exc):
                raise ZooError(
                    "not a numeric .npz archive (it holds pickled Python objects, which are not loaded)"
                ) from None
            raise ZooError(f"not a readable .npz file ({exc})") from None
        except (OSError, EOFError, zipfile.BadZipFile) as exc:
            raise ZooError(f"not a readable .npz file ({type(exc).__name__}: {exc})") from None

    def _load_h5(self) -> dict[str, np.ndarray]:
        import h5py

        try:
            with h5py.File(self.path, "r") as fh:
                return {k: fh[k][()] for k in fh.keys() if isinstance(fh[k], h5py.Dataset)}
        except OSError as exc:
            raise ZooError(f"not a readable HDF5 file ({str(exc).splitlines()[0]})") from None
