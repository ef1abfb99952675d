"""A user's temporal graph files: DyGLib's own ``ml_<name>.csv`` (saved index column, then u,i,ts,label,idx) with its
``.npy`` edge / node features read natively (never the index taken for the source), and the finite-value check of
the ``src,dst,timestamp`` CSV naming file, column and line."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from zoo.errors import ConfigError
from zoo_tasks.graphs.dynamic.data import DynamicLinkDataModule
from zoo_tasks.graphs.dynamic.dyglib import read_user_edges

# u, i, ts as DyGLib's preprocessing leaves them: 1-based ids, sorted times; the saved index (0, 1, ...) is not u
EVENTS = [(3, 5, 170.0), (1, 2, 170.0), (4, 1, 171.5), (2, 5, 200.0), (5, 3, 210.0), (1, 4, 224.0)]


def write_dyglib(folder, name: str = "toy", index: bool = True, edge_width: int | None = 3, node_width: int | None = 2):
    """``ml_<name>.csv`` as pandas' ``to_csv`` writes DyGLib's frame, ``ml_<name>.npy`` (N + 1, edge_width) and
    ``ml_<name>_node.npy`` (6, node_width), row 0 zero padding; every feature row distinct. Returns the arrays."""
    head = ",u,i,ts,label,idx" if index else "u,i,ts,label,idx"
    rows = [f"{k},{u},{i},{ts},0.0,{k + 1}" if index else f"{u},{i},{ts},0.0,{k + 1}"
            for k, (u, i, ts) in enumerate(EVENTS)]  # fmt: skip
    csv = folder / f"ml_{name}.csv"
    csv.write_text(head + "\n" + "\n".join(rows) + "\n")
    edge = node = None
    if edge_width is not None:
        edge = np.vstack([np.zeros(edge_width), 10 * np.arange(1, 7)[:, None] + np.arange(edge_width)])
        np.save(folder / f"ml_{name}.npy", edge)
    if node_width is not None:
        node = np.vstack([np.zeros(node_width), np.arange(1, 6)[:, None] * [1.0, -1.0][:node_width]])
        np.save(folder / f"ml_{name}_node.npy", node)
    return csv, edge, node


def test_dyglib_ml_csv_is_read_as_u_i_ts_with_its_npy_features(tmp_path):
    csv, edge, node = write_dyglib(tmp_path)
    g = read_user_edges(csv, feature_width=4)
    u, i, ts = (np.array(column) for column in zip(*EVENTS))
    assert g.src.tolist() == u.tolist() and g.dst.tolist() == i.tolist()  # not the saved index, not u
    assert g.ts.tolist() == ts.tolist() and g.edge_ids.tolist() == [1, 2, 3, 4, 5, 6]
    assert g.raw_ids.tolist() == [0, 1, 2, 3, 4, 5]  # DyGLib's 1-based ids kept
    assert g.edge_features.shape == (7, 4) and np.array_equal(g.edge_features[:, :3], edge)  # row k: event k
    assert not g.edge_features[:, 3].any()  # zero-padded to feature_width
    assert g.node_features.shape == (6, 4) and np.array_equal(g.node_features[:, :2], node)  # row k: node k
    assert g.name == "toy"
    assert g.cleaning == {"format": "dyglib", "blank_lines": 0, "header_lines": 1, "rows": 6, "self_loops_kept": 0,
                          "ids_renumbered": False, "edge_feature_columns": 3, "node_feature_columns": 2}  # fmt: skip


def test_the_datamodule_reads_dyglib_files_and_reports_all_three(tmp_path):
    csv, edge, _ = write_dyglib(tmp_path)
    dm = DynamicLinkDataModule(path=str(csv), feature_width=4)
    graph = dm.load()
    assert graph.src.tolist() == [e[0] for e in EVENTS] and np.array_equal(graph.edge_features[:, :3], edge)
    files = ["ml_toy.csv", "ml_toy.npy", "ml_toy_node.npy"]
    assert dm.data_sha256() == {f: hashlib.sha256((tmp_path / f).read_bytes()).hexdigest() for f in files}


def test_dyglib_csv_without_index_or_features_reads_zeros(tmp_path):
    csv, _, _ = write_dyglib(tmp_path, index=False, edge_width=None, node_width=None)
    g = read_user_edges(csv, feature_width=4)
    assert g.src.tolist() == [e[0] for e in EVENTS] and g.ts.tolist() == [e[2] for e in EVENTS]
    assert not g.edge_features.any() and not g.node_features.any()
    assert (g.cleaning["edge_feature_columns"], g.cleaning["node_feature_columns"]) == (0, 0)


def test_an_unnamed_first_column_that_is_not_dyglibs_is_refused(tmp_path):
    """A saved index before src,dst,timestamp would otherwise be read as the source ids."""
    path = tmp_path / "edges.csv"
    path.write_text(",src,dst,timestamp\n0,1,2,5.0\n1,2,3,6.0\n")
    with pytest.raises(ConfigError, match=r"edges.csv:1: the first column has no name .* read as the source ids"):
        read_user_edges(path, feature_width=4)


@pytest.mark.parametrize(
    "edit, match",
    [
        ("rows", r"ml_toy.csv:7: idx 6 has no row in ml_toy.npy \(6 rows, row 0 padding: idx must be 1..5\)"),
        ("node_rows", r"ml_toy_node.npy: 5 rows, but the CSV has node id 5 \(row 0 padding: it needs 6 rows\)"),
        ("inf", r"ml_toy.npy: 1 value\(s\) are not finite \(first: inf in column 2, row 4\)"),
        ("wide", r"ml_toy.npy: 5 feature columns, more than feature_width=4"),
        ("ts", r"ml_toy.csv: 1 value\(s\) are not finite \(first: NaN in column 'ts', line 3\)"),
        ("order", r"ml_toy.csv:4: timestamp 100 is earlier than the previous row's \(170\)"),
        ("id", r"ml_toy.csv:2: u must be a non-negative integer id, got '3.5'"),
    ],
)
def test_bad_dyglib_files_are_refused_naming_the_file(tmp_path, edit, match):
    csv, edge, node = write_dyglib(tmp_path)
    if edit == "rows":
        np.save(tmp_path / "ml_toy.npy", edge[:-1])
    elif edit == "node_rows":
        np.save(tmp_path / "ml_toy_node.npy", node[:-1])
    elif edit == "inf":
        edge[4, 1] = np.inf
        np.save(tmp_path / "ml_toy.npy", edge)
    elif edit == "wide":
        np.save(tmp_path / "ml_toy.npy", np.hstack([edge, edge[:, :2]]))
    else:
        lines = csv.read_text().splitlines()
        old = {"ts": (2, ",170.0,", ",nan,"), "order": (3, ",171.5,", ",100,"), "id": (1, "0,3,", "0,3.5,")}[edit]
        lines[old[0]] = lines[old[0]].replace(old[1], old[2], 1)
        csv.write_text("\n".join(lines) + "\n")
    with pytest.raises(ConfigError, match=match):
        read_user_edges(csv, feature_width=4)


@pytest.mark.parametrize(
    "text, match",
    [
        ("src,dst,timestamp,w\n1,2,3,0.5\n\n2,3,4,inf\n", r"first: inf in column 'w', line 4\)"),
        ("1,2,3\n2,3,-inf\n3,1,5\n", r"first: -inf in column 'timestamp', line 2\)"),
        ("1,2,3,1,nan\n2,3,4,inf,2\n", r"edges.csv: 2 value\(s\) are not finite \(first: NaN in column 'feature 2'"),
    ],
)
def test_a_non_finite_csv_value_is_refused_naming_column_and_line(tmp_path, text, match):
    path = tmp_path / "edges.csv"
    path.write_text(text)
    with pytest.raises(ConfigError, match=match):
        DynamicLinkDataModule(path=str(path), feature_width=4).load()


def test_zoo_test_runs_edgebank_on_dyglib_files(tmp_path, monkeypatch, capsys):
    """The shipped EdgeBank config (no parameters) on DyGLib's own files, given only their path: it tests, and the
    run record lists both files read."""
    import json

    from zoo.cli.main import main
    from zoo_tasks.graphs.dynamic.spec import DYGMOCE

    rng = np.random.default_rng(0)
    u, i = rng.integers(1, 41, 400), rng.integers(1, 41, 400)
    keep = u != i
    rows = [f"{k},{a},{b},{float(t)},0.0,{k + 1}" for k, (a, b, t) in enumerate(zip(u[keep], i[keep], range(400)))]
    csv = tmp_path / "ml_mine.csv"
    csv.write_text(",u,i,ts,label,idx\n" + "\n".join(rows) + "\n")
    np.save(tmp_path / "ml_mine.npy", np.zeros((len(rows) + 1, 4)))
    monkeypatch.chdir(tmp_path)
    args = ["test", "--config", str(DYGMOCE.config_path("uci_edgebank.yaml")), "--data.init_args.path", str(csv),
            "--ckpt_path", "none", "--trainer.default_root_dir", str(tmp_path / "run")]  # fmt: skip
    assert main(args) == 0, capsys.readouterr().err[-2000:]
    (record,) = (tmp_path / "run").rglob("run_test.json")
    assert set(json.loads(record.read_text())["data_sha256"]) == {"ml_mine.csv", "ml_mine.npy"}


def test_a_feature_beyond_float32_is_refused_as_inf(tmp_path):
    """The model sees float32: 1e39 would turn into inf after a check made on float64."""
    path = tmp_path / "edges.csv"
    path.write_text("src,dst,timestamp,w\n1,2,3,0.5\n2,3,4,1e39\n")
    with pytest.raises(ConfigError, match=r"first: inf in column 'w', line 3\).*float32"):
        read_user_edges(path, feature_width=4)


def test_a_graph_whose_split_has_no_new_node_events_is_refused_in_one_line(tmp_path):
    """Three nodes, all seen in training: DyGLib's inductive parts are empty (the test set used to reach a
    ValueError inside the negative sampler)."""
    rows = [",u,i,ts,label,idx"] + [f"{k},{1 + k % 3},{1 + (k + 1) % 3},{float(k)},0,{k + 1}" for k in range(300)]
    path = tmp_path / "ml_tri.csv"
    path.write_text("\n".join(rows) + "\n")
    dm = DynamicLinkDataModule(path=str(path))
    dm.setup("fit")
    assert len(dm.train_dataloader()) > 0  # training needs no new nodes (the every-router tests train on such data)
    with pytest.raises(ConfigError, match=r"ml_tri.csv: DyGLib's chronological split .* leaves no new_node_val "):
        dm.val_dataloader()
    with pytest.raises(ConfigError, match=r"leaves no new_node_test events"):
        dm.test_dataloader()
