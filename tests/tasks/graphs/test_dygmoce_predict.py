"""``zoo predict`` on DyGMoCE runs: link probabilities of the test split's events and the protocol's negatives for
them, equal to the scores the test loop gives them (the same neighbourhood before each query time, the same
batches); a user's query file scored the same way; EdgeBank remembering exactly the edges before a query; and the
Python API's load -> predict round trip equal to the files the command wrote."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from zoo_testing import csv_rows, need_dataset, tiny_trained_run

from zoo.api import load_run, predict
from zoo.cli.main import main

pytestmark = pytest.mark.slow(reason="trains a DyGMoCE run on the real graph, then scores its test events")

BATCH = 16  # the conformance case's data.eval_batch_size


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    return tiny_trained_run("dygmoce", "dygmoce", tmp_path_factory.mktemp("dygmoce"))


@pytest.fixture(scope="module")
def trained(run_dir):
    """The run loaded, its datamodule set up (a test reads the split from it)."""
    run = load_run(run_dir)
    run.datamodule.setup("test")
    return run


def test_test_events_alternate_with_their_negatives_and_get_probabilities(run_dir, trained, capsys):
    out = run_dir / "predictions" / "cli"
    assert main(["predict", str(run_dir), "--limit", str(2 * BATCH), "--out", str(out)]) == 0
    assert f"wrote 2 files to {out}" in capsys.readouterr().out
    rows = csv_rows(out / "links.csv")
    assert list(rows[0]) == ["source", "destination", "time", "probability", "label"]
    assert [int(r["label"]) for r in rows] == [1, 0] * 2 * BATCH
    test, n = trained.datamodule.split.test, 2 * BATCH
    assert [(int(r["source"]), int(r["destination"])) for r in rows[0::2]] == list(zip(test.src[:n], test.dst[:n]))
    assert [float(r["time"]) for r in rows[1::2]] == list(test.ts[:n])  # a negative at its positive's time
    assert all(0 <= float(r["probability"]) <= 1 for r in rows)
    assert (out / "scores.png").stat().st_size > 1000


def test_the_scores_are_those_the_test_loop_gives_the_same_events(run_dir):
    run = load_run(run_dir, overrides=["--data.init_args.eval_strategies=[random]"])  # no other negatives drawn
    prediction = predict(run, limit=2 * BATCH)
    loader = iter(run.datamodule.test_dataloader()[0])  # random negatives, transductive test set
    with torch.no_grad():
        pos, neg = zip(*[run.model.scores(next(loader))[:2] for _ in range(2)])
    probability = prediction.outputs["probability"]
    np.testing.assert_array_equal(probability[0::2], torch.sigmoid(torch.cat(pos)).double().numpy())
    np.testing.assert_array_equal(probability[1::2], torch.sigmoid(torch.cat(neg)).double().numpy())


def test_the_api_round_trip_equals_the_files_zoo_predict_wrote(run_dir):
    out = run_dir / "predictions" / "round-trip"
    options = ["--split", "new_node_test", "--negatives", "historical", "--limit", str(BATCH)]
    assert main(["predict", str(run_dir), *options, "--out", str(out)]) == 0
    prediction = predict(load_run(run_dir), split="new_node_test", negatives="historical", limit=BATCH)
    rows = csv_rows(out / "links.csv")
    np.testing.assert_array_equal([int(r["source"]) for r in rows], prediction.outputs["source"])
    np.testing.assert_array_equal([float(r["probability"]) for r in rows], prediction.outputs["probability"])


def write_queries(path: Path, src, dst, ts, labels=None) -> Path:
    with path.open("w") as fh:
        fh.write("source,destination,time" + (",label" if labels is not None else "") + "\n")
        for k, (s, d, t) in enumerate(zip(src, dst, ts)):
            fh.write(f"{s},{d},{float(t)!r}" + (f",{labels[k]}" if labels is not None else "") + "\n")
    return path


def test_a_users_query_file_is_scored_with_the_history_before_each_query(run_dir, trained, tmp_path):
    test = trained.datamodule.split.test
    # the first test batch's events as the user's queries (CollegeMsg's ids are the graph's): the protocol's scores
    mine = write_queries(tmp_path / "queries.csv", test.src[:BATCH], test.dst[:BATCH], test.ts[:BATCH])
    out = tmp_path / "mine"
    assert main(["predict", str(run_dir), "--queries", str(mine), "--out", str(out)]) == 0
    rows = csv_rows(out / "links.csv")
    assert list(rows[0]) == ["source", "destination", "time", "probability"]  # no labels given, none written
    protocol = predict(trained, limit=BATCH).outputs["probability"][0::2]
    np.testing.assert_array_equal([float(r["probability"]) for r in rows], protocol)
    assert (out / "scores.png").stat().st_size > 1000  # score against time


def test_edgebank_remembers_a_pair_only_after_it_was_seen(tmp_path):
    from zoo.trained import TrainedRun
    from zoo_tasks.graphs.dynamic.data import DynamicLinkDataModule
    from zoo_tasks.graphs.dynamic.module import EdgeBankPredictor

    need_dataset("CollegeMsg")
    # EdgeBank trains nothing and `zoo fit` keeps no checkpoint of it: the run is assembled here
    datamodule = DynamicLinkDataModule(eval_batch_size=BATCH, sequences=False)
    datamodule.setup("test")
    config = {"model": {"class_path": "zoo_tasks.graphs.dynamic.module.EdgeBankPredictor"}}
    run = TrainedRun(EdgeBankPredictor(memory="unlimited"), datamodule, config, Path("none"), None)
    train, full = datamodule.split.train, datamodule.split.full
    s, d, t = int(train.src[0]), int(train.dst[0]), float(train.ts[0])
    never = next(n for n in range(1, 1900) if (s, n) not in set(zip(full.src.tolist(), full.dst.tolist())))
    # at the pair's first time it is not yet remembered (history is strictly before), one second later it is
    mine = write_queries(tmp_path / "q.csv", [s, s, s], [d, d, never], [t, t + 1, t + 1], labels=[1, 1, 0])
    prediction = predict(run, queries=str(mine))
    assert prediction.outputs["probability"].tolist() == [0.0, 1.0, 0.0]
    assert "AP" in prediction.summary[1]  # labels given: metrics and the positive / negative histogram
    assert "scores.png" in prediction.pictures


def test_bad_queries_and_options_are_one_line(run_dir, tmp_path, capsys):
    assert main(["predict", str(run_dir), "--split", "train"]) == 2
    assert "choose from test, new_node_test, val, new_node_val" in capsys.readouterr().err
    assert main(["predict", str(run_dir), "--negatives", "hard"]) == 2
    assert "choose from random, historical, inductive" in capsys.readouterr().err
    unknown = write_queries(tmp_path / "unknown.csv", [1, 10**9], [2, 3], [0.0, 1.0])
    assert main(["predict", str(run_dir), "--queries", str(unknown)]) == 2
    err = capsys.readouterr().err
    assert f"{unknown}:3: source 1000000000 is not a node of the graph" in err and err.strip().count("\n") == 0
    (tmp_path / "columns.csv").write_text("src,dst,time\n1,2,0\n")
    assert main(["predict", str(run_dir), "--queries", str(tmp_path / "columns.csv")]) == 2
    assert "no column source, destination" in capsys.readouterr().err


def test_zoo_predict_takes_an_edgebank_run_folder_without_a_checkpoint(tmp_path, capsys):
    from zoo.cli.lightning_cli import ZooCLI
    from zoo.registry import get_task

    need_dataset("CollegeMsg")
    config = get_task("dygmoce").config_path("uci_edgebank.yaml")
    ZooCLI(args=["fit", "--config", str(config), f"--trainer.default_root_dir={tmp_path / 'run'}"])
    assert not list((tmp_path / "run").glob("checkpoints/*.ckpt"))  # EdgeBank trains nothing, keeps no weights
    out = tmp_path / "edgebank"
    assert main(["predict", str(tmp_path / "run"), "--limit", str(BATCH), "--out", str(out)]) == 0
    assert "a model that trains nothing" in capsys.readouterr().out
    rows = csv_rows(out / "links.csv")
    assert len(rows) == 2 * BATCH and {float(r["probability"]) for r in rows} <= {0.0, 1.0}
