"""Bag files read by suffix (tasks/mil/bag_files.py): the MIL benchmark ``.mat`` layout (a PRTools dataset struct,
as Elephant / Fox / Tiger / MUSK ship in the MIL toolbox) written here with scipy.io.savemat, plain-array ``.mat``,
the UCI Musk ``.data`` rows; through a datamodule's ``path`` with no catalogue lookup, ``model_shapes()`` from the
header and ``data_sha256()`` of the file read. The real Elephant read by the generic reader equals a direct read."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from zoo.errors import ZooError
from zoo_tasks.mil.bag_files import feature_width, read_bags
from zoo_tasks.mil.mil_data import ElephantDataModule, FeatureBagsDataModule, MUSK1DataModule


def write_prtools_mat(path, feats, bag_ids, labels, classes=("negative", "positive")):
    """A PRTools ``prdataset`` struct ``x`` in the layout of the MIL toolbox's elephant.mat: data, nlab (1-based
    into lablist's first labelling), lablist (a cell, one row per labelling), ident.milbag (bag id per instance)."""
    from scipy.io import savemat

    lablist = np.empty((2, 4), dtype=object)
    lablist[0, :] = [np.array(classes), np.array([[0.5, 0.5]]), np.zeros((0, 0)), np.array(["crisp"])]
    lablist[1, :] = [np.array(["millab "]), np.array([[1]]), np.array([[0]]), np.zeros((1, 0))]
    nlab = np.array([classes.index("positive" if y else "negative") + 1 for y in labels], dtype=np.uint8)
    ident = {"ident": np.arange(1, len(feats) + 1, dtype=np.uint16)[:, None], "milbag": bag_ids}
    struct = {"data": feats, "lablist": lablist, "nlab": nlab[:, None], "ident": ident, "name": "toy (Andrews)"}
    savemat(path, {"x": struct})


def toy_bags(num_bags=24, dim=7, seed=0):
    """Instances (N, dim), bag ids (N,) and per-instance labels; positive bags hold a shifted instance."""
    rng = np.random.default_rng(seed)
    feats, ids, labels = [], [], []
    for b in range(num_bags):
        n, y = int(rng.integers(2, 6)), b % 2
        x = rng.normal(size=(n, dim))
        if y:
            x[0] += 3.0
        feats.append(x)
        ids += [b + 1] * n
        labels += [y] * n
    return np.concatenate(feats), np.array(ids), np.array(labels)


@pytest.mark.parametrize("classes", [("negative", "positive"), ("positive", "negative")])
def test_benchmark_mat_layout_is_read_whatever_the_class_order(tmp_path, classes):
    feats, ids, labels = toy_bags()
    path = tmp_path / "tiger.mat"
    write_prtools_mat(path, feats, ids[:, None].astype(np.uint8), labels, classes)
    bags = read_bags(path)
    assert bags.names == [str(i) for i in range(1, 25)]
    assert bags.labels.tolist() == [b % 2 for b in range(24)]
    first = ids == 1
    np.testing.assert_array_equal(bags.features[0], feats[first].astype(np.float32))
    assert feature_width(path) == 7


def test_string_bag_ids_and_plain_array_mat(tmp_path):
    from scipy.io import savemat

    feats, ids, labels = toy_bags(num_bags=6, dim=3)
    names = np.array([f"MUSK-{i:03d}" for i in ids])  # char rows, as the MUSK .mat files hold molecule names
    write_prtools_mat(tmp_path / "musk.mat", feats, names, labels)
    bags = read_bags(tmp_path / "musk.mat")
    assert bags.names[:2] == ["MUSK-001", "MUSK-002"] and len(bags.labels) == 6
    savemat(tmp_path / "plain.mat", {"features": feats, "bag_ids": ids, "labels": labels})
    plain = read_bags(tmp_path / "plain.mat")
    assert plain.names == [str(i) for i in range(1, 7)] and plain.labels.tolist() == bags.labels.tolist()
    assert feature_width(tmp_path / "plain.mat") == 3


def test_musk_data_rows(tmp_path):
    path = tmp_path / "clean2.data"
    path.write_text("M1,c1,1,2,3,1.\nM1,c2,4,5,6,1.\nM2,c1,7,8,9,0.\nM3,c1,1,1,1,0.\n")
    bags = read_bags(path)
    assert bags.names == ["M1", "M2", "M3"] and bags.labels.tolist() == [1, 0, 0]
    np.testing.assert_array_equal(bags.features[0], [[1, 2, 3], [4, 5, 6]])
    assert feature_width(path) == 3


def test_bad_mat_files_say_what_is_wrong(tmp_path):
    from scipy.io import savemat

    savemat(tmp_path / "other.mat", {"y": np.zeros((3, 2))})
    with pytest.raises(ZooError, match="no array 'features'"):
        read_bags(tmp_path / "other.mat")
    (tmp_path / "junk.mat").write_bytes(b"not a mat file at all" * 20)
    with pytest.raises(ZooError, match="not a readable .mat"):
        read_bags(tmp_path / "junk.mat")
    (tmp_path / "x.txt").write_text("1,2,3\n")
    with pytest.raises(ZooError, match=r"unsupported file type '.txt' \(use .mat, .npz"):
        read_bags(tmp_path / "x.txt")


@pytest.mark.parametrize("cls", [FeatureBagsDataModule, MUSK1DataModule, ElephantDataModule])
def test_path_needs_no_catalogue_and_records_the_file_hash(tmp_path, monkeypatch, cls):
    monkeypatch.setenv("ZOO_DATA_MIRROR", str(tmp_path / "nowhere"))
    monkeypatch.setenv("ZOO_DATA_DIR", str(tmp_path / "nowhere"))
    feats, ids, labels = toy_bags(num_bags=20, dim=5)
    path = tmp_path / "fox.mat"
    write_prtools_mat(path, feats, ids[:, None].astype(np.uint8), labels)
    data = cls(path=str(path), num_folds=4)
    assert data.model_shapes() == {"in_dim": 5}
    assert data.data_sha256() == {"fox.mat": hashlib.sha256(path.read_bytes()).hexdigest()}
    assert data.standardize == "robust"  # the default for a file of your own
    data.setup()
    assert data.in_dim == 5 and len(data.train_idx) + len(data.test_idx) == 20


def test_builtin_shapes_and_hashes_come_from_the_catalogue_files(data_mirror):
    musk1, elephant = MUSK1DataModule(), ElephantDataModule()
    assert musk1.model_shapes() == {"in_dim": 166} and elephant.model_shapes() == {"in_dim": 230}
    assert musk1.data_sha256() == {"MUSK1/clean1.data": MUSK1_SHA256}
    assert musk1.standardize == elephant.standardize == "zscore"


MUSK1_SHA256 = "59e3be669d645a72b2de7e7baa21e7d4e537be918e4320e8dea6aadc9227f379"


def test_generic_reader_reads_the_real_elephant_as_a_direct_read(data_mirror):
    from scipy.io import loadmat

    path = data_mirror / "MIL" / "Elephant" / "elephant.mat"
    x = loadmat(path)["x"][0, 0]
    bags = read_bags(path)
    ids = x["ident"][0, 0]["milbag"].ravel()
    assert len(bags.labels) == 200 and bags.labels.sum() == 100
    for name, feats, label in zip(bags.names, bags.features, bags.labels):
        rows = ids == int(name)
        np.testing.assert_array_equal(feats, x["data"][rows].astype(np.float32))
        assert label == x["nlab"].ravel()[rows][0] - 1


def test_a_mat_file_trains_through_the_cli_with_only_its_path(tmp_path, monkeypatch, capsys):
    """configs/mammoth/bags.yaml + ``--data.init_args.path`` (+ a short trainer): no in_dim, no keys, no
    catalogue; the feature width comes from the file and the run fits and tests."""
    from zoo.cli.main import main
    from zoo.registry import get_task

    feats, ids, labels = toy_bags(num_bags=20, dim=60)
    path = tmp_path / "tiger.mat"
    write_prtools_mat(path, feats, ids[:, None].astype(np.uint8), labels)
    monkeypatch.chdir(tmp_path)
    config = get_task("mammoth").config_path("bags.yaml")
    args = ["fit", "--config", str(config), "--data.init_args.path", str(path), "--trainer.max_epochs", "2"]
    assert main(args) == 0, capsys.readouterr().err[-2000:]
    assert "fit done: 2 epochs" in capsys.readouterr().out
    (logs,) = (tmp_path / "runs").glob("mammoth/bags/*/lightning_logs/version_0")
    import json

    import yaml

    assert yaml.safe_load((logs / "hparams.yaml").read_text())["in_dim"] == 60  # the model was built from the file
    fit = json.loads((logs / "run_fit.json").read_text())
    assert fit["data_sha256"] == {"tiger.mat": hashlib.sha256(path.read_bytes()).hexdigest()}
    assert "projection" in json.loads((logs / "routing_summary.json").read_text())["train"]
