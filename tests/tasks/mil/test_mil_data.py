"""MIL bag datamodules (tasks/mil/mil_data.py): real MUSK1 / Elephant / digits bags, train-only standardisation, digit
validation bags that leave the CV bags alone, the bring-your-own feature loader (CSV / NPZ / HDF5) on a slice of
real MUSK1, and one clear line for each kind of bad input through ``zoo fit`` (folds: tests/utils/test_folds.py)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from zoo.errors import ConfigError, ZooError
from zoo_tasks.mil.mil_data import (
    DigitsBagsDataModule,
    ElephantDataModule,
    FeatureBagsDataModule,
    MUSK1DataModule,
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


def test_validation_digit_bags_use_fresh_images_and_leave_the_cv_bags_unchanged():
    plain = DigitsBagsDataModule(fold=2, repeat=1)
    plain.setup()
    with_val = DigitsBagsDataModule(fold=2, repeat=1, num_val_bags=20)
    with_val.setup()
    np.testing.assert_array_equal(plain.train_idx, with_val.train_idx)
    np.testing.assert_array_equal(plain.test_idx, with_val.test_idx)
    for a, b in zip(plain.bags.features, with_val.bags.features[:150]):
        np.testing.assert_array_equal(a, b)
    assert len(plain.val_idx) == 0 and plain.val_dataloader() == []
    assert with_val.val_idx.tolist() == list(range(150, 170))
    assert with_val.bags.labels[with_val.val_idx].sum() == 10
    cv_images = {f.tobytes() for i in range(150) for f in with_val.bags.features[i]}
    val_images = [f.tobytes() for i in with_val.val_idx for f in with_val.bags.features[i]]
    assert len(set(val_images) & cv_images) <= 2  # (a few 8x8 digit images are exact duplicates in sklearn's set)
    batch = next(iter(with_val.val_dataloader()))
    assert batch["x"].shape[-1] == 64 and len(batch["y"]) == with_val.batch_size
    with pytest.raises(ConfigError, match="num_val_bags"):
        DigitsBagsDataModule(num_val_bags=100).setup()


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


def _write(path, feats, bag_ids, labels):
    if path.suffix == ".npz":
        np.savez(path, features=feats, bag_ids=bag_ids, labels=labels)
    else:
        import h5py

        with h5py.File(path, "w") as fh:
            fh["features"], fh["bag_ids"], fh["labels"] = feats, bag_ids, labels


def _bad_labels(path):
    _write(path, np.ones((6, 4)), np.repeat([1, 2, 3], 2), np.array([0, 0, 2, 2, 1, 1]))


def _mixed_labels(path):
    _write(path, np.ones((6, 4)), np.repeat([1, 2, 3], 2), np.array([0, 1, 1, 1, 0, 0]))


def _nan_features(path):
    feats = np.random.default_rng(0).normal(size=(6, 4))
    feats[3, 1] = np.nan
    _write(path, feats, np.repeat([1, 2, 3], 2), np.array([0, 0, 1, 1, 0, 0]))


def _wrong_width(path):
    _write(path, np.random.default_rng(0).normal(size=(6, 3)), np.repeat([1, 2, 3], 2), np.array([0, 0, 1, 1, 0, 0]))


def _garbage(path):
    path.write_bytes(b"this is not an archive\n" * 10)


def _pickled(path):
    np.savez(path, features=np.array([{"a": 1}] * 6, dtype=object), bag_ids=np.arange(6), labels=np.zeros(6))


def _text_column(path):
    path.write_text("bag_ids,labels,f0,f1\n1,0,0.5,x\n1,0,0.1,0.2\n2,1,0.3,0.4\n")


def _inf_in_csv(path):
    path.write_text("bag_ids,labels,f0,f1,f2,f3\n1,0,0.5,0.1,0,0\n1,0,0.1,0.2,0,0\n2,1,0.3,-inf,0,0\n2,1,0.3,0.4,0,0\n")


def _text_named_mat(path):
    path.write_text("bag_ids,labels,f0,f1,f2,f3\n1,0,0.5,0.1,0,0\n2,1,0.3,0.4,0,0\n")


def _truncated_mat(path):
    from scipy.io import savemat

    feats = np.random.default_rng(0).normal(size=(60, 4))
    savemat(path, {"features": feats, "bag_ids": np.repeat(np.arange(20), 3), "labels": np.arange(60) % 2})
    path.write_bytes(path.read_bytes()[:700])


def _mat_without_arrays(path):
    from scipy.io import savemat

    savemat(path, {"X": np.zeros((6, 4)), "y": np.zeros(6)})


BAD_INPUTS = {
    "labels outside 0/1": (".npz", _bad_labels, "labels must be 0 or 1"),
    "mixed labels in a bag": (".h5", _mixed_labels, "different labels"),
    "NaN features": (".npz", _nan_features, "NaN"),
    "feature width != in_dim": (".npz", _wrong_width, r"in_dim is 4 (in the config )?but the (bags|data) ha(s|ve) 3"),
    "corrupt .npz": (".npz", _garbage, "not a readable .npz"),
    "corrupt .h5": (".h5", _garbage, "not a readable HDF5"),
    "pickled .npz": (".npz", _pickled, "pickled"),
    "non-numeric CSV column": (".csv", _text_column, "not numeric"),
    "-inf in a CSV": (".csv", _inf_in_csv, r"not finite \(first: -inf in column 'f1', data row 3\)"),
    "text file named .mat": (".mat", _text_named_mat, "not a MATLAB .mat file: .*it is text"),
    "truncated .mat": (".mat", _truncated_mat, "not a readable MATLAB .mat file: .*truncated or damaged"),
    ".mat without the arrays": (".mat", _mat_without_arrays, "no array 'features' .*the file has: X .*, y "),
}


@pytest.mark.parametrize("case", list(BAD_INPUTS))
def test_bad_bag_input_is_one_line_naming_the_file(case, tmp_path, monkeypatch, capsys):
    from zoo.cli.main import main
    from zoo.registry import get_task

    suffix, write, needle = BAD_INPUTS[case]
    path = tmp_path / f"bags{suffix}"
    write(path)
    monkeypatch.chdir(tmp_path)
    config = get_task("mammoth").config_path("features.yaml")
    args = ["fit", "--config", str(config), "--data.init_args.path", str(path)]
    args += ["--model.init_args.in_dim", "4"] if "in_dim" in case else []  # else read from the file
    args += ["--model.init_args.projection", "linear", "--model.init_args.dim", "8"]
    args += ["--data.init_args.num_folds", "2", "--trainer.max_epochs", "1", "--trainer.logger", "false"]
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("zoo: error:"), err
    assert re.search(needle, err[0]) and "Traceback" not in err[0] and "allow_pickle" not in err[0]
    if "in_dim" not in case:
        assert str(path) in err[0]


def test_bag_builders_raise_zoo_errors():
    with pytest.raises(ZooError, match="different labels"):
        group_instances(np.zeros((3, 2)), np.array([1, 1, 2]), np.array([0, 1, 1]))
    with pytest.raises(ZooError, match="per instance"):
        group_instances(np.zeros((3, 2)), np.array([1, 1, 2]), np.array([0, 1, 1, 0]))
    with pytest.raises(ZooError, match="0 or 1"):  # checked before the cast to int, which would make 0.5 a 0
        group_instances(np.zeros((3, 2)), np.array([1, 1, 2]), np.array([0.5, 0.5, 1]))


def test_missing_arrays_and_files_name_the_key(tmp_path):
    np.savez(tmp_path / "x.npz", feats=np.zeros((2, 2)))
    with pytest.raises(ConfigError, match="data.features_key"):
        FeatureBagsDataModule(str(tmp_path / "x.npz")).load_bags()
    with pytest.raises(ConfigError, match="no file"):
        FeatureBagsDataModule(str(tmp_path / "none.npz")).load_bags()
