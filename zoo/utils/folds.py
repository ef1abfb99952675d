"""Stratified K-fold cross-validation over items with binary or class labels (e.g. MIL bags).

The classic MIL benchmarks (MUSK1, Elephant) have no official split; the literature reports accuracy from 10-fold
cross-validation repeated 5 times with different shuffles (Ilse et al., ICML 2018, Sec. 5.1).
"""

from __future__ import annotations

import numpy as np
from sklearn.model_selection import StratifiedKFold

from zoo.errors import ConfigError


def stratified_fold(labels: np.ndarray, fold: int, num_folds: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(train, test) indices of ``fold`` in ``StratifiedKFold(num_folds, shuffle=True, random_state=seed)``.

    ``labels`` (n,) one class per item. The test folds of ``fold = 0 .. num_folds - 1`` partition the items, each
    with about the overall class ratio; another ``seed`` is another repeat. Raises ConfigError naming ``fold`` /
    ``num_folds`` when they are out of range or a class has fewer items than folds.
    """
    labels = np.asarray(labels)
    if num_folds < 2:
        raise ConfigError(f"num_folds must be >= 2, got {num_folds}")
    if not 0 <= fold < num_folds:
        raise ConfigError(f"fold must be in [0, {num_folds}), got {fold}")
    _, counts = np.unique(labels, return_counts=True)
    if len(labels) < num_folds or counts.max(initial=0) < num_folds:
        raise ConfigError(
            f"num_folds={num_folds} is more than the {len(labels)} items (largest class {counts.max(initial=0)}) allow"
        )
    splitter = StratifiedKFold(n_splits=num_folds, shuffle=True, random_state=seed)
    return list(splitter.split(np.zeros(len(labels)), labels))[fold]
