"""Bag files read by suffix (tasks/mil/bag_files.py): the MIL benchmark ``.mat`` layout (a PRTools dataset struct,
as Elephant / Fox / Tiger / MUSK ship in the MIL toolbox) written here with scipy.io.savemat, plain-array ``.mat``,
the UCI Musk ``.data`` rows; through a datamodule's ``path`` with no catalogue lookup, ``model_shapes()`` from the
header and ``data_sha256()`` of the file read. The real Elephant read by the generic reader equals a direct read."""

from __future__ import annotations

import hashlib
import re

import numpy as np
import pytest

from zoo.errors import ConfigError, ZooError
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


def test_unsupported_suffix_is_refused(tmp_path):
    (tmp_path / "x.txt").write_text("1,2,3\n")
    with pytest.raises(ZooError, match=r"unsupported file type '.txt' \(use .mat, .npz"):
        read_bags(tmp_path / "x.txt")


def write_v73_mat(path, arrays, body=None):
    """A MATLAB v7.3 file as MATLAB writes one: a 128-byte MAT header (version 0x0200, "IM") in a 512-byte user
    block, then HDF5 with each matrix stored column-major (transposed). ``body`` replaces the HDF5 part."""
    import h5py

    tmp = path.with_suffix(".h5tmp")
    with h5py.File(tmp, "w", userblock_size=512) as fh:
        for name, value in arrays.items():
            fh[name] = np.asarray(value).T
    text = b"MATLAB 7.3 MAT-file, Platform: GLNXA64, Created on: Mon Jan  1 00:00:00 2024 HDF5 schema 1.00 ."
    header = text.ljust(116, b" ") + bytes(8) + b"\x00\x02IM"
    hdf5 = tmp.read_bytes()[512:] if body is None else body
    path.write_bytes(header.ljust(512, b"\x00") + hdf5)
    tmp.unlink()


def _plain_arrays(num_bags=6, dim=3):
    feats, ids, labels = toy_bags(num_bags=num_bags, dim=dim)
    return {"features": feats, "bag_ids": ids[:, None].astype(float), "labels": labels[:, None].astype(float)}


def test_a_v73_mat_file_is_read_as_hdf5(tmp_path):
    arrays = _plain_arrays()
    write_v73_mat(tmp_path / "v73.mat", arrays)
    bags = read_bags(tmp_path / "v73.mat")
    assert len(bags.labels) == 6 and feature_width(tmp_path / "v73.mat") == 3
    first = arrays["features"][arrays["bag_ids"][:, 0] == 1].astype(np.float32)
    np.testing.assert_array_equal(bags.features[0], first)  # rows are instances: the stored transpose is undone


NOT_MAT = {
    "a CSV table": (b"bag_ids,labels,f1\n1,0,0.5\n2,1,0.3\n", "it is text, starting 'bag_ids,labels,f1'"),
    "an HTML error page": (b"<html><body>404 Not Found</body></html>\n" * 5, "it is text, starting '<html>"),
    "random bytes": (np.random.default_rng(0).bytes(300).replace(b"\x00", b"\x01"), "no MAT-file header"),
    "an empty file": (b"", "the file is empty"),
}


@pytest.mark.parametrize("case", list(NOT_MAT))
def test_a_file_that_is_not_a_mat_file_is_refused_in_one_line_naming_it(tmp_path, case):
    """A text file named .mat reached a 46-line scipy IndexError (issue 56, item 3)."""
    content, what = NOT_MAT[case]
    path = tmp_path / "bags.mat"
    path.write_bytes(content)
    for reader in (read_bags, feature_width):
        with pytest.raises(ConfigError) as info:
            reader(path)
        message = str(info.value)
        assert message.startswith(f"not a MATLAB .mat file: {path} (") and what in message
        assert "\n" not in message


def _truncated(data: bytes) -> bytes:
    return data[: len(data) // 2]


def _v5(tmp_path, compress):
    from scipy.io import savemat

    savemat(tmp_path / "good.mat", _plain_arrays(num_bags=40, dim=20), do_compression=compress)
    return (tmp_path / "good.mat").read_bytes()


def _v4(tmp_path):
    from scipy.io import savemat

    savemat(tmp_path / "good.mat", _plain_arrays(num_bags=40, dim=20), format="4")
    return (tmp_path / "good.mat").read_bytes()


def _v73(tmp_path):
    write_v73_mat(tmp_path / "good.mat", _plain_arrays(num_bags=40, dim=20))
    return (tmp_path / "good.mat").read_bytes()


DAMAGED = {
    "truncated v5": (lambda tmp: _truncated(_v5(tmp, False)), "v5 header"),
    "truncated compressed v5": (lambda tmp: _truncated(_v5(tmp, True)), "v5 header"),
    "truncated v4": (lambda tmp: _truncated(_v4(tmp)), "v4 header"),
    "truncated v7.3": (lambda tmp: _truncated(_v73(tmp)), "v7.3 header, but HDF5: "),
    "v7.3 header, garbage after it": (lambda tmp: _v73(tmp)[:512] + b"garbage" * 100, "v7.3 header, but no HDF5"),
}


@pytest.mark.parametrize("case", list(DAMAGED))
def test_a_truncated_or_damaged_mat_file_is_refused_in_one_line_naming_it(tmp_path, case):
    damage, what = DAMAGED[case]
    path = tmp_path / "bags.mat"
    path.write_bytes(damage(tmp_path))
    with pytest.raises(ZooError) as info:
        read_bags(path)
    message = str(info.value)
    assert message.startswith(f"not a readable MATLAB .mat file: {path} (") and what in message
    assert "truncated or damaged" in message and "\n" not in message


def test_a_mat_file_without_the_bag_arrays_names_the_file_what_it_expects_and_what_it_has(tmp_path):
    from scipy.io import savemat

    path = tmp_path / "other.mat"
    savemat(path, {"y": np.zeros((3, 2)), "features": np.zeros((3, 2))})
    with pytest.raises(ConfigError) as info:
        read_bags(path)
    message = str(info.value)
    assert message.startswith(f"{path}: no array 'bag_ids' (data.bag_key), 'labels' (data.label_key), nor a PRTools")
    assert "fields data, nlab, ident" in message and message.endswith(
        "the file has: features (3x2 float64), y (3x2 float64)"
    )
    v73 = tmp_path / "v73.mat"
    write_v73_mat(v73, {"y": np.zeros((3, 2))})
    with pytest.raises(ConfigError, match=rf"^{re.escape(str(v73))}: no array 'features' .*the file has: y \(3x2"):
        read_bags(v73)


def _csv_with(path, cell):
    path.write_text(f"bag_ids,labels,f1,f2\n1,0,0.5,0.1\n1,0,0.2,0.3\n2,1,{cell},0.4\n2,1,0.1,0.2\n")


def _data_with(path, cell):
    path.write_text(f"M1,c1,1,2,3,1.\nM1,c2,4,5,6,1.\nM2,c1,7,{cell},9,0.\n")


def _npz_with(path, value):
    arrays = _plain_arrays()
    arrays["features"][2, 1] = value
    np.savez(path, **arrays)


def _h5_with(path, value):
    import h5py

    arrays = _plain_arrays()
    arrays["features"][2, 1] = value
    with h5py.File(path, "w") as fh:
        for name, array in arrays.items():
            fh[name] = array


def _mat_with(path, value):
    from scipy.io import savemat

    arrays = _plain_arrays()
    arrays["features"][2, 1] = value
    savemat(path, arrays)


def _prtools_with(path, value):
    feats, ids, labels = toy_bags(num_bags=6, dim=3)
    feats[2, 1] = value
    write_prtools_mat(path, feats, ids[:, None].astype(np.uint8), labels)


def _v73_with(path, value):
    arrays = _plain_arrays()
    arrays["features"][2, 1] = value
    write_v73_mat(path, arrays)


def _in_array(name: str, kind: str) -> str:
    """Where the message must place a non-finite value written at row 3, column 2 of array ``name``."""
    return f"(array {name!r}): 1 value(s) are not finite (first: {kind} in column 2, row 3)"


# (writer, suffix, the cell's value in the file, where the message must say it is)
NON_FINITE = {
    "CSV inf": (_csv_with, ".csv", "inf", "first: inf in column 'f1', data row 3"),
    "CSV -inf": (_csv_with, ".csv", "-inf", "first: -inf in column 'f1', data row 3"),
    "CSV empty cell": (_csv_with, ".csv", "", "first: NaN in column 'f1', data row 3"),
    "UCI .data -inf": (_data_with, ".data", "-inf", "first: -inf in column 'f2', data row 3"),
    ".npz NaN": (_npz_with, ".npz", np.nan, _in_array("features", "NaN")),
    ".h5 inf": (_h5_with, ".h5", np.inf, _in_array("features", "inf")),
    ".mat -inf": (_mat_with, ".mat", -np.inf, _in_array("features", "-inf")),
    "PRTools .mat NaN": (_prtools_with, ".mat", np.nan, _in_array("x.data", "NaN")),
    "v7.3 .mat inf": (_v73_with, ".mat", np.inf, _in_array("features", "inf")),
}


@pytest.mark.parametrize("case", list(NON_FINITE))
def test_a_non_finite_value_is_refused_naming_file_column_and_row(tmp_path, case):
    """Item 2 of issue 56: every reader refuses NaN / inf / -inf through zoo.data.finite.require_finite."""
    write, suffix, value, where = NON_FINITE[case]
    path = tmp_path / f"bags{suffix}"
    write(path, value)
    with pytest.raises(ConfigError) as info:
        read_bags(path)
    message = str(info.value)
    assert message.startswith(str(path)) and where in message and "\n" not in message


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
