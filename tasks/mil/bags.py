"""`Bags`, a binary multiple-instance dataset held in memory, and :func:`group_instances`, which builds one from
instance rows and their bag ids (the shape every reader in :mod:`zoo_tasks.mil.bag_files` ends in)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from zoo.errors import ZooError


@dataclass
class Bags:
    """A MIL dataset: ``features[i]`` (n_i, D) float32, ``labels`` (num_bags,) int in {0, 1},
    ``instance_labels[i]`` (n_i,) int or None, ``names`` the bag ids in file order.

    Finite values are the readers' check (:mod:`zoo_tasks.mil.bag_files`, through
    :func:`zoo.data.finite.require_finite`), made where the file, column and row are known."""

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
