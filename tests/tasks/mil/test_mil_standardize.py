"""Bag standardisation (tasks/mil/standardize.py) on a sparse feature set: the records' z-score divides a column that
is constant on the training bags by its float32 round-off std (test |z| ~ 1e8, as on Elephant), the robust mode
keeps every value within ``clip``; on dense Gaussian features both agree; mode names are checked."""

from __future__ import annotations

import numpy as np
import pytest

from zoo.errors import ConfigError
from zoo_tasks.mil.mil_data import DigitsBagsDataModule, ElephantDataModule, FeatureBagsDataModule
from zoo_tasks.mil.standardize import fit_transform, standardize_mode


def sparse_bags(seed: int = 0) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """50 bags of 10 instances x 6 features, ~90 % zeros; column 0 is 3.3 on the training bags (float32 std of
    ~5e-7 instead of 0) and jumps to 53.3 on some test instances. Returns features, train and test bag indices."""
    rng = np.random.default_rng(seed)
    feats = []
    for _ in range(50):
        x = rng.exponential(2.0, size=(10, 6)) * (rng.random((10, 6)) < 0.1)
        x[:, 0] = 3.3
        feats.append(x.astype(np.float32))
    train, test = np.arange(40), np.arange(40, 50)
    for i in test[:3]:
        feats[i][0, 0] = 53.3
    return feats, train, test


def _max_abs(features, idx):
    return max(float(np.abs(features[i]).max()) for i in idx)


def test_records_zscore_explodes_on_sparse_test_features_and_robust_does_not():
    feats, train, test = sparse_bags()
    legacy = fit_transform([f.copy() for f in feats], train, "zscore")
    assert _max_abs(legacy, test) > 1e6  # the bug the robust mode fixes (kept in "zscore" for the records)
    robust = fit_transform([f.copy() for f in feats], train, "robust", clip=10.0)
    assert _max_abs(robust, test) <= 10.0 and _max_abs(robust, train) <= 10.0
    assert all(np.isfinite(f).all() and f.dtype == np.float32 for f in robust)
    train_rows = np.concatenate([robust[i] for i in train])
    assert np.abs(np.median(train_rows, axis=0)).max() < 1e-6  # centred on the training bags
    np.testing.assert_array_equal(robust[test[0]][0, 0], 10.0)  # 53.3 on a column constant in training: clipped
    np.testing.assert_array_equal(robust[test[5]][:, 0], 0.0)  # the training constant maps to 0


def test_robust_and_zscore_agree_on_dense_gaussian_features():
    rng = np.random.default_rng(1)
    feats = [rng.normal(5.0, 3.0, size=(40, 4)).astype(np.float32) for _ in range(30)]
    train = np.arange(25)
    z, r = fit_transform(feats, train, "zscore"), fit_transform(feats, train, "robust", clip=1e6)
    np.testing.assert_allclose(np.concatenate(r), np.concatenate(z), atol=0.15)


def test_none_leaves_features_and_modes_are_checked():
    feats, train, _ = sparse_bags()
    assert fit_transform(feats, train, "none") is feats
    assert standardize_mode(True) == "zscore" and standardize_mode(False) == "none"
    with pytest.raises(ConfigError, match="data.standardize: unknown mode 'minmax'; valid: zscore, robust, none"):
        standardize_mode("minmax")
    with pytest.raises(ConfigError, match="data.clip"):
        fit_transform(feats, train, "robust", clip=0.0)


def test_defaults_robust_for_user_files_records_rule_for_the_benchmarks(tmp_path):
    np.savez(tmp_path / "b.npz", features=np.zeros((4, 2)), bag_ids=np.arange(4), labels=np.arange(4) % 2)
    assert FeatureBagsDataModule(str(tmp_path / "b.npz")).standardize == "robust"
    assert FeatureBagsDataModule(str(tmp_path / "b.npz"), standardize=True).standardize == "zscore"
    assert ElephantDataModule().standardize == "zscore" and DigitsBagsDataModule().standardize == "none"


def test_robust_bounds_the_real_elephant_fold_where_zscore_reaches_1e8(data_mirror):
    """Repeat 0, fold 6 of Elephant: a column constant on the training folds has float32 std 1.5e-7."""
    legacy, robust = ElephantDataModule(fold=6, repeat=0), ElephantDataModule(fold=6, repeat=0, standardize="robust")
    legacy.setup()
    robust.setup()
    assert _max_abs(legacy.bags.features, legacy.test_idx) > 1e8
    assert _max_abs(robust.bags.features, robust.test_idx) <= 10.0
