"""zoo.utils.folds: stratified K-fold folds partition the items, keep the class ratio, differ per seed, stay the
splits the recorded MIL runs used (pinned indices), and bad fold settings name the key."""

from __future__ import annotations

import numpy as np
import pytest

from zoo.errors import ConfigError
from zoo.utils.folds import stratified_fold

LABELS = np.array([0, 1, 1, 0, 1, 0, 0, 1, 1, 1, 0, 0, 1, 0, 1, 1, 0, 0, 1, 0])


@pytest.mark.parametrize("seed", [0, 3])
def test_test_folds_partition_the_items_and_keep_the_class_ratio(seed):
    labels = np.random.default_rng(seed).permutation(np.arange(92) < 47).astype(int)  # MUSK1's 47 of 92
    folds = [stratified_fold(labels, k, 10, seed) for k in range(10)]
    assert sorted(np.concatenate([test for _, test in folds]).tolist()) == list(range(92))
    for train, test in folds:
        assert not set(train) & set(test) and len(train) + len(test) == 92
        assert abs(labels[test].mean() - labels.mean()) < 0.11
    assert not np.array_equal(folds[0][1], stratified_fold(labels, 0, 10, seed + 1)[1])


def test_splits_are_the_ones_recorded_runs_used():
    # produced by tasks/mil/mil_data.py:cv_split at 79e6fd0 (sklearn 1.9.1); a change here moves every MIL record
    assert stratified_fold(LABELS, 2, 4, 3)[1].tolist() == [9, 11, 13, 14, 18]
    assert stratified_fold(LABELS, 0, 5, 0)[1].tolist() == [4, 10, 12, 17]


@pytest.mark.parametrize(
    ("fold", "num_folds", "match"),
    [(4, 4, "fold must be in"), (-1, 4, "fold must be in"), (0, 1, "num_folds"), (0, 11, "num_folds=11")],
)
def test_bad_fold_settings_raise_config_error(fold, num_folds, match):
    with pytest.raises(ConfigError, match=match):
        stratified_fold(LABELS, fold, num_folds, 0)
