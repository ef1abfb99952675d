"""Bag datamodules for binary multiple-instance learning, with stratified K-fold cross-validation over bags.

A bag is a float array (n_i, D) of instance features with one 0/1 label. Every datamodule yields padded
batches ``{"x": (B, N, D), "mask": (B, N) bool, "y": (B,) float, "instance_labels": (B, N) long}``
(instance labels are -1 where unknown or padding). The classic benchmarks (MUSK1, Elephant) have no official
split: the literature reports bag accuracy from 10-fold cross-validation repeated 5 times (Ilse et al. 2018).
Here ``fold`` selects the test fold of :func:`zoo.utils.folds.stratified_fold` (``StratifiedKFold(num_folds,
shuffle=True, random_state=repeat)``); ``repeat=None`` uses the run's global seed (``seed_everything`` sets
``PL_GLOBAL_SEED``), so ``zoo reproduce`` seeds 0..4 are the 5 repeats. Features are standardised with the
training folds' statistics (:mod:`zoo_tasks.mil.standardize`).

Your own data: every datamodule takes ``path``, a bag file in any format of :mod:`zoo_tasks.mil.bag_files`
(``.mat`` in the MIL benchmark layout, ``.npz``, ``.h5``, ``.csv``, UCI ``.data``), read with no catalogue lookup
or checksum; ``data_sha256()`` gives the sha256 of each file read and ``model_shapes()`` the model's ``in_dim``.

Bad input (labels outside {0, 1}, mixed labels inside a bag, NaN / inf features, an unreadable file) raises
:class:`zoo.errors.ZooError` / ``ConfigError`` with one line naming the file and the array or column.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytorch_lightning as pl
import torch
from torch.utils.data import DataLoader

from zoo.data import resolve
from zoo.data.resolve import sha256_of
from zoo.errors import ConfigError, ZooError
from zoo.utils.folds import stratified_fold
from zoo_tasks.mil.bag_files import KEYS, feature_width, read_bags
from zoo_tasks.mil.bags import Bags, group_instances
from zoo_tasks.mil.standardize import fit_transform, standardize_mode

__all__ = ["Bags", "group_instances", "collate_bags", "BagDataModule"]


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
    """Base class: cross-validation over the bags of :meth:`load_bags`, standardisation, padded batches.

    Args:
        data_dir: explicit dataset folder of a built-in dataset (else ``zoo.data.resolve`` looks in $ZOO_DATA_DIR /
            $ZOO_DATA_MIRROR).
        fold: test fold index in ``[0, num_folds)``.
        num_folds: number of stratified CV folds over bags.
        repeat: shuffle seed of the CV split; None uses the global seed (``PL_GLOBAL_SEED``, else 0).
        batch_size: bags per training batch (bags are padded; models mask the padding).
        standardize: ``"zscore"`` (the benchmark records' rule), ``"robust"`` or ``"none"``
            (:mod:`zoo_tasks.mil.standardize`; ``true`` / ``false`` mean zscore / none); None: robust for a file
            given by ``path``, else the dataset's own default (``default_standardize``).
        path: your own bag file (:mod:`zoo_tasks.mil.bag_files`) instead of the built-in dataset; not looked up in
            the catalogue and not checksum-verified (its sha256 is recorded through :meth:`data_sha256`).
        clip: bound on |feature| after ``"robust"`` standardisation.
    """

    default_standardize = "zscore"
    keys = KEYS  # features / bag-id / label array names in a user file

    def __init__(
        self,
        data_dir: str | None = None,
        fold: int = 0,
        num_folds: int = 10,
        repeat: int | None = None,
        batch_size: int = 8,
        standardize: bool | str | None = None,
        path: str | None = None,
        clip: float = 10.0,
    ) -> None:
        super().__init__()
        if num_folds < 2:
            raise ConfigError(f"num_folds must be >= 2, got {num_folds}")
        if batch_size < 1:
            raise ConfigError(f"batch_size must be >= 1, got {batch_size}")
        if path is not None and data_dir is not None:
            raise ConfigError("data.path and data.data_dir: give one (path: your bag file; data_dir: a built-in set)")
        self.data_dir, self.fold, self.num_folds = data_dir, fold, num_folds
        self.repeat, self.batch_size = repeat, batch_size
        self.path = Path(path).expanduser() if path is not None else None
        default = "robust" if self.path is not None else self.default_standardize
        self.standardize = standardize_mode(default if standardize is None else standardize)
        self.clip = clip
        self.bags: Bags | None = None
        self.train_idx = self.test_idx = None
        self._path: Path | None = None  # the file the bags come from, once known
        self.num_val_bags = 0  # the last num_val_bags bags of load_bags() are validation bags, outside the CV
        self.val_idx = np.arange(0)

    def load_bags(self) -> Bags:
        """The bags of ``path`` when given, else of the built-in dataset (:meth:`load_builtin`)."""
        if self.path is not None:
            self._path = self.path
            return read_bags(self.path, self.keys)
        return self.load_builtin()

    def load_builtin(self) -> Bags:
        raise ConfigError(f"data.path: {type(self).__name__} has no built-in dataset; give the path of a bag file")

    def builtin_file(self) -> Path | None:
        """The catalogue file the built-in dataset is read from (None when it is not read from a file)."""
        return None

    def builtin_width(self) -> int:
        file = self.builtin_file()
        if file is None:
            raise ConfigError(f"data.path: {type(self).__name__} has no built-in dataset; give the path of a bag file")
        return feature_width(file)

    def model_shapes(self) -> dict[str, int]:
        """``{"in_dim": D}``, the features per instance, from the file's header / array shapes."""
        try:
            width = feature_width(self.path, self.keys) if self.path is not None else self.builtin_width()
        except ZooError as exc:
            if self.path is None or str(self.path) in str(exc):
                raise
            raise type(exc)(f"{self.path}: {exc}") from None
        return {"in_dim": int(width)}

    def data_sha256(self) -> dict[str, str]:
        """File name -> sha256 of each file the bags are read from."""
        if self.path is not None:
            return {self.path.name: sha256_of(self.path)} if self.path.is_file() else {}
        file = self.builtin_file()
        if file is None:
            return {}
        return {f"{file.parent.name}/{file.name}": sha256_of(file)}

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
            if self.source() in str(exc):
                raise
            raise type(exc)(f"{self.source()}: {exc}") from None
        num_cv = len(bags.labels) - self.num_val_bags
        self.train_idx, self.test_idx = stratified_fold(bags.labels[:num_cv], self.fold, self.num_folds, self.cv_seed)
        self.val_idx = np.arange(num_cv, len(bags.labels))
        bags.features = fit_transform(bags.features, self.train_idx, self.standardize, self.clip)
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
    (instances) with 166 integer features; read from UCI ``clean1.data`` (bag = molecule_name). With ``path``, any
    bag file (e.g. MUSK2's ``clean2.data``, same layout)."""

    def builtin_file(self) -> Path:
        return resolve("MIL", path=self.data_dir, files=["MUSK1/clean1.data"]) / "MUSK1" / "clean1.data"

    def load_builtin(self) -> Bags:
        self._path = self.builtin_file()
        bags = read_bags(self._path)
        if bags.features[0].shape[1] != 166:
            raise ZooError("expected 169 comma-separated columns per row")
        return bags


class ElephantDataModule(BagDataModule):
    """Elephant (Andrews, Tsochantaridis & Hofmann, NIPS 2002): 200 Corel images (bags; 100 positive) of 1,391
    segments (instances) with 230 features; read from the MIL-toolbox ``elephant.mat``. With ``path``, any bag file
    (e.g. Fox or Tiger ``.mat`` files of the same family)."""

    def builtin_file(self) -> Path:
        return resolve("MIL", path=self.data_dir, files=["Elephant/elephant.mat"]) / "Elephant" / "elephant.mat"

    def load_builtin(self) -> Bags:
        self._path = self.builtin_file()
        return read_bags(self._path)


class DigitsBagsDataModule(BagDataModule):
    """Digit bags after MNIST-bags (Ilse et al., ICML 2018, Sec. 5.2) from scikit-learn's 8x8 digits (1,797 images).

    A bag holds ``bag_size ~ round(N(mean_bag_size, std_bag_size))`` (at least 2) images, flattened to 64
    features in [0, 1]; it is positive iff it contains a ``target_digit``. Bags are built once from
    ``bag_seed`` (independent of the CV repeat), half of them positive, and every image is used in at most one
    bag, so no image is shared between a training and a test fold. Instance labels are the digit classes.

    ``num_val_bags`` more bags are drawn the same way, after the ``num_bags`` cross-validated ones and from images
    none of them uses, as validation bags (model selection, ``val_dataloader``); the CV bags and folds do not
    depend on it. 0 (the benchmark's protocol) means no validation. With ``path``, the bags of that file are used
    instead (no validation bags).
    """

    default_standardize = "none"

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
        standardize: bool | str | None = None,
        num_val_bags: int = 0,
        path: str | None = None,
        clip: float = 10.0,
    ) -> None:
        super().__init__(
            fold=fold,
            num_folds=num_folds,
            repeat=repeat,
            batch_size=batch_size,
            standardize=standardize,
            path=path,
            clip=clip,
        )
        if num_bags < 2 or num_val_bags < 0:
            raise ConfigError(f"data.num_bags must be >= 2 and data.num_val_bags >= 0, got {num_bags}, {num_val_bags}")
        if path is not None and num_val_bags:
            raise ConfigError(f"data.num_val_bags: validation bags are drawn from digits, not from data.path ({path})")
        self.num_bags, self.mean_bag_size, self.std_bag_size = num_bags, mean_bag_size, std_bag_size
        self.target_digit, self.bag_seed, self.num_val_bags = target_digit, bag_seed, num_val_bags

    def source(self) -> str:
        return str(self.path) if self.path is not None else "scikit-learn digits"

    def builtin_width(self) -> int:
        return 64

    def data_sha256(self) -> dict[str, str]:
        if self.path is not None:
            return super().data_sha256()
        from importlib.resources import files

        digits = Path(str(files("sklearn.datasets") / "data" / "digits.csv.gz"))
        return {f"sklearn/{digits.name}": sha256_of(digits)} if digits.is_file() else {}

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

    def load_builtin(self) -> Bags:
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
    """Bring-your-own bags (e.g. pre-extracted pathology patch embeddings, or another MIL benchmark ``.mat``) from
    any format of :mod:`zoo_tasks.mil.bag_files`: ``.mat``, ``.npz``, ``.h5`` / ``.hdf5``, ``.csv``, ``.data``.

    Array / column names of ``.npz`` / ``.h5`` / ``.csv`` / plain ``.mat`` files can be changed with
    ``features_key``, ``bag_key`` and ``label_key``. Features are standardised robustly unless ``standardize`` says
    otherwise.
    """

    def __init__(
        self,
        path: str | None = None,
        features_key: str = "features",
        bag_key: str = "bag_ids",
        label_key: str = "labels",
        fold: int = 0,
        num_folds: int = 10,
        repeat: int | None = None,
        batch_size: int = 8,
        standardize: bool | str | None = None,
        clip: float = 10.0,
    ) -> None:
        if path is None:
            raise ConfigError("data.path is required: the .mat / .npz / .h5 / .csv file holding your bags")
        super().__init__(
            fold=fold,
            num_folds=num_folds,
            repeat=repeat,
            batch_size=batch_size,
            standardize=standardize,
            path=path,
            clip=clip,
        )
        self.features_key, self.bag_key, self.label_key = features_key, bag_key, label_key
        self.keys = (features_key, bag_key, label_key)

    def source(self) -> str:
        return str(self.path)
