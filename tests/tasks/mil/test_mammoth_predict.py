"""``zoo predict`` on MAMMOTH runs: a label and p(positive) for every bag of the run's test fold (the bags its test
loop scores), the attention weight of every instance (ABMIL: a softmax over each bag), DSMIL's instance logits and
the digit images of digit bags, the user's own bag file (CSV) predicted like the catalogue's, and the Python API's
load -> predict round trip equal to the files the command wrote."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from zoo_testing import csv_rows, tiny_trained_run

from zoo.api import load_run, predict
from zoo.cli.main import main

pytestmark = pytest.mark.slow(reason="trains tiny MAMMOTH runs (MUSK1, digit bags), then predicts")

TINY = (
    *("--model.init_args.dim=8", "--model.init_args.num_experts=3", "--model.init_args.num_slots=2"),
    *("--model.init_args.num_heads=2", "--model.init_args.slot_dim=8", "--model.init_args.rank=2"),
    *("--model.init_args.plot_bags=0", "--data.init_args.batch_size=4"),
)


@pytest.fixture(scope="module")
def musk_run(tmp_path_factory):
    # musk1.yaml keeps no checkpoints (its runs take seconds): this one needs its last.ckpt
    root = tmp_path_factory.mktemp("musk")
    return tiny_trained_run("mammoth", "abmil-mammoth", root, extra=("--trainer.enable_checkpointing=true",))


@pytest.fixture(scope="module")
def digits_run(tmp_path_factory):
    """DSMIL on digit bags (CNN encoder over 8x8 images), with the config's 20 validation bags."""
    from zoo.cli.lightning_cli import ZooCLI
    from zoo.conformance_run import TRAINER
    from zoo.registry import get_task

    root = tmp_path_factory.mktemp("digits") / "run"
    keep = ("--trainer.logger=false", "--trainer.enable_checkpointing=false")
    trainer = [a for a in TRAINER if a not in keep]
    config = str(get_task("mammoth").config_path("digits.yaml"))
    dsmil = ("--model.init_args.aggregator=dsmil", "--trainer.max_epochs=2", "--trainer.limit_train_batches=2")
    ZooCLI(args=["fit", "--config", config, *TINY, *dsmil, *trainer, f"--trainer.default_root_dir={root}"])
    return root


def test_each_test_bag_gets_a_label_and_each_instance_its_attention_weight(musk_run, capsys):
    out = musk_run / "predictions" / "cli"
    assert main(["predict", str(musk_run), "--out", str(out)]) == 0
    assert f"wrote 4 files to {out}" in capsys.readouterr().out
    run = load_run(musk_run)
    run.datamodule.setup("test")
    bags = run.datamodule.bags
    rows = csv_rows(out / "predictions.csv")
    assert [int(r["bag"]) for r in rows] == list(run.datamodule.test_idx)
    assert [r["bag_id"] for r in rows] == [bags.names[i] for i in run.datamodule.test_idx]
    p = np.array([[float(r["p_0"]), float(r["p_1"])] for r in rows])
    assert np.all((p >= 0) & (p <= 1)) and np.allclose(p.sum(1), 1)
    assert [int(r["predicted"]) for r in rows] == list((p[:, 1] > 0.5).astype(int))
    assert [int(r["label"]) for r in rows] == list(bags.labels[run.datamodule.test_idx])
    instances = pd.read_csv(out / "instances.csv")
    assert list(instances.columns) == ["bag", "bag_id", "instance", "weight"]
    for bag, group in instances.groupby("bag", sort=False):
        assert list(group["instance"]) == list(range(len(bags.features[bag])))  # every instance, in file order
        assert group["weight"].sum() == pytest.approx(1, abs=1e-5)  # ABMIL's softmax over the bag
    assert (out / "bags.png").stat().st_size > 1000
    assert (out / "instance_weights.png").stat().st_size > 1000


def test_the_probabilities_are_those_the_runs_test_loop_computes(musk_run):
    run = load_run(musk_run)
    prediction = predict(run)
    with torch.no_grad():
        expected = [torch.sigmoid(run.model(b["x"], b["mask"]).logits) for b in run.datamodule.test_dataloader()]
    np.testing.assert_allclose(prediction.outputs["probabilities"][:, 1], torch.cat(expected).numpy(), atol=1e-6)


def test_the_api_round_trip_equals_the_files_zoo_predict_wrote(musk_run):
    out = musk_run / "predictions" / "round-trip"
    assert main(["predict", str(musk_run), "--split", "train", "--out", str(out)]) == 0
    prediction = predict(load_run(musk_run), split="train")
    rows = csv_rows(out / "predictions.csv")
    np.testing.assert_array_equal([int(r["bag"]) for r in rows], prediction.outputs["bag"])
    np.testing.assert_array_equal([float(r["p_1"]) for r in rows], prediction.outputs["probabilities"][:, 1])
    weights = pd.read_csv(out / "instances.csv")["weight"].to_numpy()
    np.testing.assert_array_equal(weights, np.concatenate(prediction.outputs["weights"]).astype(float))


def test_the_users_own_bag_csv_is_predicted_like_the_catalogue_bags(musk_run, tmp_path):
    from zoo_tasks.mil.bag_files import read_bags
    from zoo_tasks.mil.mil_data import MUSK1DataModule

    bags = read_bags(MUSK1DataModule().builtin_file())  # MUSK1's own bags, as the user's CSV format
    table = [
        {"bag_ids": name, "labels": int(label), **{f"f{j}": v for j, v in enumerate(row)}}
        for name, label, features in zip(bags.names, bags.labels, bags.features)
        for row in features
    ]
    mine = tmp_path / "my_bags.csv"
    pd.DataFrame(table).to_csv(mine, index=False)
    out = tmp_path / "mine"
    args = ["--data.init_args.path", str(mine), "--split", "all", "--out", str(out)]
    assert main(["predict", str(musk_run), *args]) == 0
    rows = csv_rows(out / "predictions.csv")
    assert [r["bag_id"] for r in rows] == bags.names
    catalogue = predict(load_run(musk_run), split="all")
    np.testing.assert_allclose([float(r["p_1"]) for r in rows], catalogue.outputs["probabilities"][:, 1], atol=1e-6)


def test_digit_bags_get_dsmil_weights_instance_logits_digits_and_their_images(digits_run):
    out = digits_run / "predictions" / "val"
    assert main(["predict", str(digits_run), "--split", "val", "--pictured_bags", "3", "--out", str(out)]) == 0
    assert len(csv_rows(out / "predictions.csv")) == 20  # digits.yaml's validation bags
    instances = pd.read_csv(out / "instances.csv")
    assert list(instances.columns) == ["bag", "bag_id", "instance", "weight", "instance_logit", "instance_label"]
    assert set(instances["instance_label"]) <= set(range(10))
    assert np.allclose(instances.groupby("bag")["weight"].sum(), 1, atol=1e-5)  # DSMIL's stream-2 attention
    assert (out / "instance_weights.png").stat().st_size > 5000  # 3 rows of digit images


def test_mean_pooling_has_no_instance_weights_to_write(tmp_path):
    run = tiny_trained_run(
        "mammoth", "abmil-mammoth", tmp_path,
        extra=("--trainer.enable_checkpointing=true", "--model.init_args.aggregator=mean"),
    )  # fmt: skip
    out = tmp_path / "out"
    assert main(["predict", str(run), "--out", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["bags.png", "predictions.csv"]


def test_bad_options_are_one_line(musk_run, capsys):
    assert main(["predict", str(musk_run), "--split", "bags"]) == 2
    assert "choose from train, val, test, all" in capsys.readouterr().err
    assert main(["predict", str(musk_run), "--split", "val"]) == 2
    err = capsys.readouterr().err
    assert "no validation bags" in err and err.strip().count("\n") == 0
    assert main(["predict", str(musk_run), "--pictured_bags", "-1"]) == 2
    assert capsys.readouterr().err.strip().count("\n") == 0
