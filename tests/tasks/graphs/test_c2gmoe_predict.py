"""``zoo predict`` on C2GMoE runs: node labels with class probabilities on Cora's test nodes (and on the same graph
given as the user's own Planetoid folder), graph labels on every graph of a TU dataset, and the Python API's
load -> predict round trip equal to the files the command wrote."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from zoo_testing import csv_rows, need_dataset, tiny_trained_run

from zoo.api import load_run, predict
from zoo.cli.main import main

pytestmark = pytest.mark.slow(reason="trains a tiny C2GMoE run on the real graph, then predicts")


def read_predictions(folder):
    return csv_rows(folder / "predictions.csv")


def probabilities(rows) -> np.ndarray:
    keys = sorted((k for k in rows[0] if k.startswith("p_")), key=lambda k: int(k[2:]))
    return np.array([[float(r[k]) for k in keys] for r in rows])


@pytest.fixture(scope="module")
def node_run(tmp_path_factory):
    return tiny_trained_run("c2gmoe", "node-c2gmoe", tmp_path_factory.mktemp("node"))


def test_zoo_predict_writes_each_test_node_with_probabilities_and_a_confusion_matrix(node_run, capsys):
    out = node_run / "predictions" / "cli"
    assert main(["predict", str(node_run), "--out", str(out)]) == 0
    assert f"wrote 2 files to {out}" in capsys.readouterr().out
    rows = read_predictions(out)
    assert len(rows) == 1000  # Cora's public test split
    probs = probabilities(rows)
    assert probs.shape == (1000, 7) and np.all((probs >= 0) & (probs <= 1))
    np.testing.assert_allclose(probs.sum(1), 1, atol=1e-5)
    assert [int(r["predicted"]) for r in rows] == list(probs.argmax(1))
    assert {int(r["label"]) for r in rows} <= set(range(7))
    assert (out / "confusion.png").stat().st_size > 1000


def test_the_api_round_trip_equals_the_files_zoo_predict_wrote(node_run):
    out = node_run / "predictions" / "round-trip"
    assert main(["predict", str(node_run), "--split", "val", "--out", str(out)]) == 0
    prediction = predict(load_run(node_run), split="val")
    rows = read_predictions(out)
    np.testing.assert_array_equal([int(r["node"]) for r in rows], prediction.outputs["node"])
    np.testing.assert_array_equal(probabilities(rows), prediction.outputs["probabilities"].astype(float))


def test_predict_on_the_users_own_planetoid_folder_equals_the_catalogue_graph(node_run, tmp_path, monkeypatch):
    raw = need_dataset("Planetoid") / "Cora" / "raw"
    monkeypatch.setenv("ZOO_CACHE_DIR", str(tmp_path / "cache"))
    mine = tmp_path / "my_graph"
    shutil.copytree(raw, mine)
    out = tmp_path / "mine"
    assert main(["predict", str(node_run), "--data.init_args.path", str(mine), "--out", str(out)]) == 0
    catalogue = predict(load_run(node_run))
    np.testing.assert_array_equal(
        probabilities(read_predictions(out)), catalogue.outputs["probabilities"].astype(float)
    )


def test_every_graph_of_a_tu_dataset_gets_a_label(tmp_path):
    run = tiny_trained_run("c2gmoe", "graph-c2gmoe", tmp_path)
    out = tmp_path / "all"
    assert main(["predict", str(run), "--split", "all", "--out", str(out)]) == 0
    rows = read_predictions(out)
    datamodule = load_run(run).datamodule
    datamodule.setup("test")
    assert [int(r["graph"]) for r in rows] == list(range(len(datamodule.dataset)))
    assert probabilities(rows).shape[1] == datamodule.num_classes


def test_bad_input_is_one_line(node_run, tmp_path, capsys):
    assert main(["predict", str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip().count("\n") == 0
    assert main(["predict", str(node_run), "--split", "nodes"]) == 2
    assert "choose from train, val, test, all" in capsys.readouterr().err
    existing = tmp_path / "taken"
    existing.mkdir()
    assert main(["predict", str(node_run), "--out", str(existing)]) == 2
    assert "exists already" in capsys.readouterr().err
