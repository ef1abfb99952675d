"""MIL bag datamodules: real MUSK1 / Elephant / digits bags, CV folds that partition the bags, train-only
standardisation, and the bring-your-own feature loader (CSV / NPZ / HDF5) on a slice of real MUSK1."""

from __future__ import annotations

import numpy as np
import pytest

from zoo.errors import ConfigError
from zoo_tasks.mil.mil_data import (
    DigitsBagsDataModule,
    ElephantDataModule,
    FeatureBagsDataModule,
    MUSK1DataModule,
    cv_split,
    group_instances,
)


@pytest.fixture(scope="module")
def musk1(data_mirror):
    return MUSK1DataModule(repeat=0).load_bags()


def test_musk1_and_elephant_match_their_source(musk1, data_mirror):
    assert (len(musk1.labels), int(musk1.labels.sum()), sum(len(f) for f in musk1.features)) == (92, 47, 476)
    assert musk1.features[0].shape[1] == 166
    elephant = ElephantDataModule().load_bags()
    assert (len(elephant.labels), int(elephant.labels.sum()), sum(len(f) for f in elephant.features)) == (
        200,
        100,
        1391,
    )
    assert elephant.features[0].shape[1] == 230


@pytest.mark.parametrize("repeat", [0, 3])
def test_cv_folds_partition_the_bags(musk1, repeat):
    tests = [cv_split(musk1.labels, k, 10, repeat) for k in range(10)]
    all_test = np.concatenate([test for _, test in tests])
    assert sorted(all_test.tolist()) == list(range(92))  # every bag is tested exactly once
    for train, test in tests:
        assert not set(train) & set(test) and len(train) + len(test) == 92
        assert abs(musk1.labels[test].mean() - musk1.labels.mean()) < 0.11  # stratified
    assert not np.array_equal(tests[0][1], cv_split(musk1.labels, 0, 10, repeat + 1)[1])
    with pytest.raises(ConfigError, match="fold"):
        cv_split(musk1.labels, 10, 10, 0)


def test_standardisation_uses_training_bags_only(data_mirror, monkeypatch):
    monkeypatch.setenv("PL_GLOBAL_SEED", "2")
    data = MUSK1DataModule(fold=4)
    data.setup()
    assert data.cv_seed == 2
    train = np.concatenate([data.bags.features[i] for i in data.train_idx])
    test = np.concatenate([data.bags.features[i] for i in data.test_idx])
    np.testing.assert_allclose(train.mean(0), 0, atol=1e-4)
    assert np.abs(test.mean(0)).max() > 1e-2
    batch = next(iter(data.test_dataloader()))
    assert len(batch["y"]) == min(data.batch_size, len(data.test_idx))
    assert batch["mask"].sum(1).tolist() == [len(data.bags.features[i]) for i in data.test_idx[: len(batch["y"])]]


def test_digit_bags_are_positive_iff_they_hold_a_nine():
    bags = DigitsBagsDataModule(num_bags=60).load_bags()
    assert len(bags.labels) == 60 and bags.labels.sum() == 30
    for feats, label, digits in zip(bags.features, bags.labels, bags.instance_labels):
        assert feats.shape == (len(digits), 64) and 0 <= feats.min() and feats.max() <= 1
        assert label == int(9 in digits)
    used = np.concatenate(bags.features)
    assert len(np.unique(used, axis=0)) > 0.97 * len(used)  # images are not reused across bags


@pytest.mark.parametrize("suffix", [".csv", ".npz", ".h5"])
def test_feature_bag_loader_round_trips_real_musk1(musk1, tmp_path, suffix):
    keep = range(12)
    feats = np.concatenate([musk1.features[i] for i in keep])
    bag_ids = np.concatenate([[musk1.names[i]] * len(musk1.features[i]) for i in keep])
    labels = np.concatenate([[musk1.labels[i]] * len(musk1.features[i]) for i in keep])
    path = tmp_path / f"bags{suffix}"
    if suffix == ".csv":
        import pandas as pd

        frame = pd.DataFrame(feats, columns=[f"f{j}" for j in range(feats.shape[1])])
        frame.insert(0, "bag_ids", bag_ids)
        frame.insert(1, "labels", labels)
        frame.to_csv(path, index=False)
    elif suffix == ".npz":
        np.savez(path, features=feats, bag_ids=bag_ids, labels=labels)
    else:
        import h5py

        with h5py.File(path, "w") as fh:
            fh["features"], fh["bag_ids"], fh["labels"] = feats, bag_ids.astype("S"), labels
    loaded = FeatureBagsDataModule(str(path), num_folds=3).load_bags()
    assert loaded.names == [musk1.names[i] for i in keep]
    np.testing.assert_array_equal(loaded.labels, musk1.labels[list(keep)])
    for i in keep:
        np.testing.assert_array_equal(loaded.features[i], musk1.features[i])


def test_bad_bag_input_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="different labels"):
        group_instances(np.zeros((3, 2)), np.array([1, 1, 2]), np.array([0, 1, 1]))
    with pytest.raises(ValueError, match="per instance"):
        group_instances(np.zeros((3, 2)), np.array([1, 1, 2]), np.array([0, 1, 1, 0]))
    np.savez(tmp_path / "x.npz", feats=np.zeros((2, 2)))
    with pytest.raises(ConfigError, match="missing array"):
        FeatureBagsDataModule(str(tmp_path / "x.npz")).load_bags()
    with pytest.raises(ConfigError, match="no file"):
        FeatureBagsDataModule(str(tmp_path / "none.npz")).load_bags()
