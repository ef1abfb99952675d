"""A user's own graphs (tasks/graphs/data.py ``path``): TU- and Planetoid-layout folders written at test time, any
name, read with no catalogue lookup, their sha256 and shapes reported, TU node features made from degrees when the
graphs carry none, and trained through ``zoo fit`` with nothing but the path and tiny-run flags."""

from __future__ import annotations

import hashlib
import math
import pickle

import numpy as np
import pytest
import torch

from zoo.errors import ConfigError, DatasetNotFoundError
from zoo_tasks.graphs.data import PlanetoidDataModule, TUDataModule, user_pyg_root
from zoo_tasks.graphs.spec import C2GMOE


def _toy_graphs(n: int = 40) -> list[tuple[list[tuple[int, int]], int]]:
    """Class 0: cycles of 5-8 nodes (every degree 2); class 1: stars of 3-6 leaves (centre degree 3-6)."""
    graphs = []
    for i in range(n):
        size = 5 + i % 4
        if i % 2 == 0:
            edges = [(j, (j + 1) % size) for j in range(size)]
        else:
            edges = [(0, j) for j in range(1, size - 1)]
        graphs.append((edges, i % 2))
    return graphs


def write_tu(folder, name: str = "TOYGRAPHS", node_labels: bool = False):
    """The TU raw layout: ``<NAME>_A.txt`` (1-based node ids, both directions), ``_graph_indicator``, labels -1/+1."""
    folder.mkdir(parents=True, exist_ok=True)
    a, indicator, labels, node_lab, degrees, offset = [], [], [], [], [], 0
    for g, (edges, label) in enumerate(_toy_graphs(), start=1):
        num_nodes = max(max(e) for e in edges) + 1
        deg = np.zeros(num_nodes, dtype=int)
        for u, v in edges:
            a += [f"{u + offset + 1}, {v + offset + 1}", f"{v + offset + 1}, {u + offset + 1}"]
            deg[u] += 1
            deg[v] += 1
        indicator += [str(g)] * num_nodes
        node_lab += [str(j % 3) for j in range(num_nodes)]
        labels.append("1" if label else "-1")
        degrees.append(deg)
        offset += num_nodes
    (folder / f"{name}_A.txt").write_text("\n".join(a) + "\n")
    (folder / f"{name}_graph_indicator.txt").write_text("\n".join(indicator) + "\n")
    (folder / f"{name}_graph_labels.txt").write_text("\n".join(labels) + "\n")
    if node_labels:
        (folder / f"{name}_node_labels.txt").write_text("\n".join(node_lab) + "\n")
    return np.concatenate(degrees)


def test_tu_folder_without_node_features_gets_one_hot_degrees(tmp_path, monkeypatch):
    monkeypatch.setenv("ZOO_CACHE_DIR", str(tmp_path / "cache"))
    folder = tmp_path / "mine"
    degrees = write_tu(folder)
    dm = TUDataModule(path=str(folder), num_folds=4, batch_size=64)
    assert dm.model_shapes() == {"in_dim": 7, "num_classes": 2}  # degrees 0..6 (star of 6 leaves); labels -1/+1
    assert dm.name == "TOYGRAPHS" and dm.dataset is None  # the name comes from the files; no graph transformed yet
    assert (
        dm.data_sha256() == {f.name: hashlib.sha256(f.read_bytes()).hexdigest() for f in folder.iterdir()}
        and len(dm.data_sha256()) == 3
    )
    dm.setup()
    x = torch.cat([g.x for g in dm.dataset])
    assert x.shape == (len(degrees), 7) and torch.equal(x.sum(1), torch.ones(len(degrees)))
    assert torch.equal(x.argmax(1), torch.from_numpy(degrees))  # one-hot of each node's degree, graph by graph
    assert sorted(set(dm.labels.tolist())) == [0, 1]
    batch = next(iter(dm.train_dataloader()))
    assert batch.x.shape[1] == dm.num_features == 7


def test_node_feature_options(tmp_path, monkeypatch, data_mirror):
    monkeypatch.setenv("ZOO_CACHE_DIR", str(tmp_path / "cache"))
    folder = tmp_path / "mine"
    degrees = write_tu(folder, node_labels=True)
    own = TUDataModule(path=str(folder))
    assert own.model_shapes()["in_dim"] == 3  # auto: the 3 node labels, one-hot
    forced = TUDataModule(path=str(folder), node_features="degree", max_degree=3)
    assert forced.model_shapes()["in_dim"] == 4
    forced.setup()
    capped = torch.cat([g.x for g in forced.dataset]).argmax(1)
    assert torch.equal(capped, torch.from_numpy(np.minimum(degrees, 3)))  # degrees above the cap share the last column
    constant = TUDataModule(path=str(folder), node_features="constant")
    constant.setup()
    assert constant.num_features == 1 and all(torch.equal(g.x, torch.ones(g.num_nodes, 1)) for g in constant.dataset)
    # a catalogued dataset: auto keeps MUTAG's 7 node labels (the recorded runs), degree replaces them
    assert TUDataModule("MUTAG").model_shapes() == {"in_dim": 7, "num_classes": 2}
    assert TUDataModule("MUTAG", node_features="degree").model_shapes()["in_dim"] == 5  # MUTAG's largest degree: 4
    with pytest.raises(ConfigError, match=r"node_features='degrees' is not valid; choose from auto, degree, constant"):
        TUDataModule(path=str(folder), node_features="degrees")
    with pytest.raises(ConfigError, match=r"max_degree=-1"):
        TUDataModule(path=str(folder), max_degree=-1)


def test_user_folder_errors_name_the_path_and_the_missing_files(tmp_path, monkeypatch):
    monkeypatch.setenv("ZOO_CACHE_DIR", str(tmp_path / "cache"))
    with pytest.raises(DatasetNotFoundError, match=r"path='.*nowhere' is not a folder"):
        TUDataModule(path=str(tmp_path / "nowhere")).model_shapes()
    (tmp_path / "empty").mkdir()
    with pytest.raises(DatasetNotFoundError, match=r"holds no TU <NAME>_A.txt files"):
        TUDataModule(path=str(tmp_path / "empty")).model_shapes()
    folder = tmp_path / "mine"
    write_tu(folder)
    (folder / "TOYGRAPHS_graph_labels.txt").unlink()
    with pytest.raises(DatasetNotFoundError, match=r"TU dataset 'TOYGRAPHS' lacks TOYGRAPHS_graph_labels.txt"):
        TUDataModule(path=str(folder)).model_shapes()
    write_tu(folder)
    write_tu(folder, name="OTHER")
    with pytest.raises(ConfigError, match=r"several datasets \(OTHER, TOYGRAPHS\); set name to one of them"):
        TUDataModule(path=str(folder)).model_shapes()
    assert TUDataModule(name="other", path=str(folder)).model_shapes()["num_classes"] == 2


def write_planetoid(folder, name: str = "MyGraph", nodes: int = 600, dim: int = 12, classes: int = 3, seed: int = 0):
    """Planetoid's raw files: ``ind.<name>.{x,y}`` the 20 training nodes, ``allx/ally`` the first 520 (the public
    split takes the next 500 as validation), ``tx/ty`` the last 80 in ``test.index`` order, ``graph`` a dict of
    neighbour lists. Features: a class-dependent bag of words; edges mostly within a class."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    y = rng.integers(0, classes, nodes)
    x = (rng.random((nodes, dim)) < 0.1).astype(np.float32)
    x[np.arange(nodes), y] = 1.0
    onehot = np.eye(classes, dtype=np.float32)[y]
    graph = {i: [] for i in range(nodes)}
    for i in range(nodes):
        for j in rng.choice(np.flatnonzero(y == y[i]), 3):
            if j != i:
                graph[i].append(int(j))
                graph[int(j)].append(i)
    test = np.arange(520, nodes)[::-1]  # any order: row k of tx / ty belongs to node test[k]
    parts = {"x": x[:20], "y": onehot[:20], "allx": x[:520], "ally": onehot[:520], "tx": x[test], "ty": onehot[test]}
    parts["graph"] = graph
    for part, value in parts.items():
        with open(folder / f"ind.{name}.{part}", "wb") as fh:
            pickle.dump(value, fh)
    (folder / f"ind.{name}.test.index").write_text("\n".join(map(str, test)) + "\n")
    return x, y


def test_planetoid_folder_is_read_with_its_shapes_and_sha256(tmp_path, monkeypatch):
    monkeypatch.setenv("ZOO_CACHE_DIR", str(tmp_path / "cache"))
    folder = tmp_path / "planetoid"
    x, y = write_planetoid(folder)
    dm = PlanetoidDataModule(path=str(folder), normalize_features=False)
    assert dm.model_shapes() == {"in_dim": 12, "num_classes": 3}
    parts = ("x", "tx", "allx", "y", "ty", "ally", "graph", "test.index")
    assert dm.name == "MyGraph" and set(dm.data_sha256()) == {f"ind.mygraph.{p}" for p in parts}  # PyG's names
    graph_sha = hashlib.sha256((folder / "ind.MyGraph.graph").read_bytes()).hexdigest()
    assert dm.data_sha256()["ind.mygraph.graph"] == graph_sha
    dm.setup()
    assert torch.equal(dm.data.x, torch.from_numpy(x)) and torch.equal(dm.data.y, torch.from_numpy(y))
    assert (int(dm.data.train_mask.sum()), int(dm.data.val_mask.sum()), int(dm.data.test_mask.sum())) == (20, 500, 80)


def _fit(tmp_path, config: str, path, monkeypatch) -> dict:
    from zoo.cli.main import main

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ZOO_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("ZOO_DATA_DIR", str(tmp_path / "nothing-here"))
    run = tmp_path / "run"
    code = main(
        [
            "fit",
            *("--config", str(C2GMOE.config_path(config))),
            *("--data.init_args.path", str(path)),
            *("--trainer.max_epochs", "2", "--trainer.default_root_dir", str(run)),
        ]
    )
    assert code in (0, None)
    checkpoints = sorted(run.rglob("*.ckpt"), key=lambda p: p.stat().st_mtime)
    assert checkpoints, list(run.rglob("*"))
    state = torch.load(checkpoints[-1], map_location="cpu", weights_only=False)  # the last one written
    assert all(math.isfinite(v.float().abs().sum()) for v in state["state_dict"].values())
    return state


@pytest.mark.parametrize("config", ["tu_gin.yaml", "tu_c2gmoe.yaml"])
def test_zoo_fit_trains_on_a_tu_folder_without_node_features_given_only_its_path(tmp_path, monkeypatch, config):
    write_tu(tmp_path / "mine")
    state = _fit(tmp_path, config, tmp_path / "mine", monkeypatch)
    assert (state["hyper_parameters"]["in_dim"], state["hyper_parameters"]["num_classes"]) == (7, 2)
    assert state["global_step"] >= 1  # the best-val checkpoint: 32 training graphs, one batch, one step per epoch
    first = "net.convs.0.nn.0.weight" if config == "tu_gin.yaml" else "net.router_conv.lin.weight"
    assert state["state_dict"][first].shape[1] == 7  # the one-hot degrees 0..6


def test_zoo_fit_trains_on_a_planetoid_folder_given_only_its_path(tmp_path, monkeypatch):
    write_planetoid(tmp_path / "planetoid")
    state = _fit(tmp_path, "cora_gcn.yaml", tmp_path / "planetoid", monkeypatch)
    assert (state["hyper_parameters"]["in_dim"], state["hyper_parameters"]["num_classes"]) == (12, 3)
    assert state["state_dict"]["net.gnn.convs.0.lin.weight"].shape == (16, 12)


def _refused(folder, match: str) -> str:
    """The one-line ConfigError a TU folder gets before PyG reads it (the message, checked against ``match``)."""
    with pytest.raises(ConfigError, match=match) as caught:
        TUDataModule(path=str(folder)).model_shapes()
    assert "\n" not in str(caught.value)
    return str(caught.value)


@pytest.mark.parametrize("part", ["A", "graph_indicator", "graph_labels", "node_labels"])
def test_an_empty_tu_file_is_refused_naming_it(tmp_path, monkeypatch, part):
    monkeypatch.setenv("ZOO_CACHE_DIR", str(tmp_path / "cache"))
    write_tu(tmp_path / "mine", node_labels=True)
    (tmp_path / "mine" / f"TOYGRAPHS_{part}.txt").write_text("")
    _refused(tmp_path / "mine", rf"mine/TOYGRAPHS_{part}.txt: the file is empty; it must hold one line per")


def test_every_tu_file_empty_is_refused_at_the_first_one(tmp_path, monkeypatch):
    monkeypatch.setenv("ZOO_CACHE_DIR", str(tmp_path / "cache"))
    write_tu(tmp_path / "mine")
    for f in (tmp_path / "mine").iterdir():
        f.write_text("")
    _refused(tmp_path / "mine", r"TOYGRAPHS_A.txt: the file is empty; it must hold one line per edge")


def test_a_truncated_graph_indicator_is_refused_naming_it(tmp_path, monkeypatch):
    """The last graph (7 nodes) loses 3 of its nodes' lines: its edges now point past the node count."""
    monkeypatch.setenv("ZOO_CACHE_DIR", str(tmp_path / "cache"))
    degrees = write_tu(tmp_path / "mine")
    indicator = tmp_path / "mine" / "TOYGRAPHS_graph_indicator.txt"
    indicator.write_text("".join(indicator.read_text().splitlines(keepends=True)[:-3]))
    nodes = len(degrees) - 3
    outside = rf"TOYGRAPHS_A.txt: line \d+: edge \(\d+, {nodes + 1}\) has a node id outside 1..{nodes} "
    _refused(tmp_path / "mine", outside + rf"\(TOYGRAPHS_graph_indicator.txt has {nodes} lines, one per node")
    write_tu(tmp_path / "labelled", node_labels=True)  # with node labels, their line count shows it first
    indicator = tmp_path / "labelled" / "TOYGRAPHS_graph_indicator.txt"
    indicator.write_text("".join(indicator.read_text().splitlines(keepends=True)[:-3]))
    _refused(tmp_path / "labelled", rf"TOYGRAPHS_node_labels.txt: {nodes + 3} lines, but TOYGRAPHS_graph_indicator"
                                    rf".txt has {nodes} \(one line per node\)")  # fmt: skip


@pytest.mark.parametrize(
    "edit, match",
    [
        ("9999, 1\n", r"TOYGRAPHS_A.txt: line 441: edge \(9999, 1\) has a node id outside 1..240"),
        ("0, 1\n", r"TOYGRAPHS_A.txt: line 441: edge \(0, 1\) has a node id outside 1..240 .*ids are 1-based"),
        ("1, 7\n", r"TOYGRAPHS_A.txt: line 441: edge \(1, 7\) joins graph 1 and graph 2"),
        ("1, 2, 3\n", r"TOYGRAPHS_A.txt: line 441 has 3 comma-separated value\(s\), expected 2"),
        ("1, two\n", r"TOYGRAPHS_A.txt: line 441: 'two' is not an integer"),
        ("1; 2\n", r"TOYGRAPHS_A.txt: line 441 has 1 comma-separated value\(s\), expected 2"),
        ("\n1, 2\n", r"TOYGRAPHS_A.txt: line 441 is blank"),
        ("1, 2", r"TOYGRAPHS_A.txt: the last line \(441\) has no line ending"),
    ],
)
def test_a_bad_edge_line_is_refused_naming_file_and_line(tmp_path, monkeypatch, edit, match):
    monkeypatch.setenv("ZOO_CACHE_DIR", str(tmp_path / "cache"))
    write_tu(tmp_path / "mine")
    edges = tmp_path / "mine" / "TOYGRAPHS_A.txt"
    assert len(edges.read_text().splitlines()) == 440
    edges.write_text(edges.read_text() + edit)
    _refused(tmp_path / "mine", match)


def test_graph_ids_must_cover_the_labels_in_order(tmp_path, monkeypatch):
    monkeypatch.setenv("ZOO_CACHE_DIR", str(tmp_path / "cache"))
    write_tu(tmp_path / "mine")
    labels = tmp_path / "mine" / "TOYGRAPHS_graph_labels.txt"
    labels.write_text(labels.read_text() + "1\n")  # a 41st label, no node in graph 41
    _refused(tmp_path / "mine", r"TOYGRAPHS_graph_indicator.txt: no node belongs to graph 41 \(1 of the 41 graphs")
    write_tu(tmp_path / "mine")
    labels.write_text("".join(labels.read_text().splitlines(keepends=True)[:-1]))  # 39 labels for 40 graphs
    _refused(tmp_path / "mine", r"TOYGRAPHS_graph_indicator.txt: line \d+: graph id 40 is outside 1..39 \(TOYGRAPHS")
    write_tu(tmp_path / "mine")
    indicator = tmp_path / "mine" / "TOYGRAPHS_graph_indicator.txt"
    lines = indicator.read_text().splitlines(keepends=True)
    indicator.write_text("".join([lines[5], lines[0], *lines[1:5], *lines[6:]]))  # a node of graph 2 first
    _refused(tmp_path / "mine", r"TOYGRAPHS_graph_indicator.txt: line 2: graph id 1 after 2; list the nodes graph by")


@pytest.mark.parametrize("value, kind", [("inf", "inf"), ("-inf", "-inf"), ("nan", "NaN")])
def test_a_non_finite_node_attribute_is_refused_naming_file_column_and_line(tmp_path, monkeypatch, value, kind):
    monkeypatch.setenv("ZOO_CACHE_DIR", str(tmp_path / "cache"))
    degrees = write_tu(tmp_path / "mine")
    rows = [f"{d}.0, 0.5" for d in degrees]
    rows[41] = f"1.0, {value}"
    (tmp_path / "mine" / "TOYGRAPHS_node_attributes.txt").write_text("\n".join(rows) + "\n")
    _refused(tmp_path / "mine", rf"TOYGRAPHS_node_attributes.txt: 1 value\(s\) are not finite \(first: {kind} in "
                                r"column 2, line 42\)")  # fmt: skip
    rows[41] = "1.0, 0.5"
    (tmp_path / "mine" / "TOYGRAPHS_node_attributes.txt").write_text("\n".join(rows) + "\n")
    assert TUDataModule(path=str(tmp_path / "mine")).model_shapes()["in_dim"] == 2  # the same folder, finite: read


def test_a_non_integer_graph_label_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("ZOO_CACHE_DIR", str(tmp_path / "cache"))
    write_tu(tmp_path / "mine")
    labels = tmp_path / "mine" / "TOYGRAPHS_graph_labels.txt"
    labels.write_text(labels.read_text().replace("-1\n", "-1.5\n", 1))
    _refused(tmp_path / "mine", r"TOYGRAPHS_graph_labels.txt: line 1: '-1.5' is not an integer")


def test_zoo_fit_on_a_truncated_tu_folder_ends_in_one_line(tmp_path, monkeypatch, capsys):
    from zoo.cli.main import main

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ZOO_CACHE_DIR", str(tmp_path / "cache"))
    write_tu(tmp_path / "mine")
    indicator = tmp_path / "mine" / "TOYGRAPHS_graph_indicator.txt"
    indicator.write_text("".join(indicator.read_text().splitlines(keepends=True)[:-3]))
    args = ["fit", "--config", str(C2GMOE.config_path("tu_gin.yaml")), "--data.init_args.path", str(tmp_path / "mine")]
    assert main([*args, "--trainer.max_epochs", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "TOYGRAPHS_A.txt: line" in err[0] and "TOYGRAPHS_graph_indicator.txt" in err[0], err


@pytest.mark.parametrize("sparse", [False, True])
def test_a_non_finite_planetoid_feature_is_refused_naming_file_column_and_row(tmp_path, monkeypatch, sparse):
    import scipy.sparse

    monkeypatch.setenv("ZOO_CACHE_DIR", str(tmp_path / "cache"))
    x, _ = write_planetoid(tmp_path / "planetoid")
    allx = x[:520].copy()
    allx[7, 3] = -np.inf
    with open(tmp_path / "planetoid" / "ind.MyGraph.allx", "wb") as fh:
        pickle.dump(scipy.sparse.csr_matrix(allx) if sparse else allx, fh)
    with pytest.raises(
        ConfigError, match=r"ind.MyGraph.allx: 1 value\(s\) are not finite \(first: -inf in column 4, row 7\)"
    ):
        PlanetoidDataModule(path=str(tmp_path / "planetoid")).model_shapes()
    (tmp_path / "planetoid" / "ind.MyGraph.tx").write_text("not a pickle")
    with pytest.raises(ConfigError, match=r"ind.MyGraph.tx: not a readable Planetoid feature pickle"):
        PlanetoidDataModule(path=str(tmp_path / "planetoid")).model_shapes()


def test_a_tu_dataset_under_data_dir_gets_the_same_checks(tmp_path, monkeypatch):
    monkeypatch.setenv("ZOO_CACHE_DIR", str(tmp_path / "cache"))
    write_tu(tmp_path / "root" / "TOYGRAPHS" / "raw")
    (tmp_path / "root" / "TOYGRAPHS" / "raw" / "TOYGRAPHS_graph_indicator.txt").write_text("")
    with pytest.raises(ConfigError, match=r"TOYGRAPHS/raw/TOYGRAPHS_graph_indicator.txt: the file is empty"):
        TUDataModule(name="TOYGRAPHS", data_dir=str(tmp_path / "root")).model_shapes()


def test_a_node_attribute_beyond_float32_is_refused_as_inf(tmp_path, monkeypatch):
    """PyG reads node attributes as float32: 1e39 would become inf inside the model."""
    monkeypatch.setenv("ZOO_CACHE_DIR", str(tmp_path / "cache"))
    degrees = write_tu(tmp_path / "mine")
    rows = ["1.0"] * len(degrees)
    rows[9] = "1e39"
    (tmp_path / "mine" / "TOYGRAPHS_node_attributes.txt").write_text("\n".join(rows) + "\n")
    _refused(tmp_path / "mine", r"TOYGRAPHS_node_attributes.txt: 1 value\(s\) are not finite \(first: inf in column 1, "
                                r"line 10\).*float32")  # fmt: skip


def test_a_copy_of_the_same_files_whose_folder_was_deleted_leaves_no_dangling_link(tmp_path, monkeypatch):
    monkeypatch.setenv("ZOO_CACHE_DIR", str(tmp_path / "cache"))
    first, second = tmp_path / "first", tmp_path / "second"
    for folder in (first, second):
        folder.mkdir()
        (folder / "graph.txt").write_text("0 1\n1 2\n")
    user_pyg_root("tu", "mine", {"mine_A.txt": first / "graph.txt"})
    (first / "graph.txt").unlink()
    first.rmdir()  # the same content is cached under the same digest, its link now points nowhere

    root = user_pyg_root("tu", "mine", {"mine_A.txt": second / "graph.txt"})

    link = root / "mine" / "raw" / "mine_A.txt"
    assert link.exists() and link.resolve() == (second / "graph.txt").resolve()
