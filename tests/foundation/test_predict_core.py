"""The task-independent half of ``zoo predict`` (``zoo.predict``, ``zoo.cli.predict``): a prediction's files appear
all at once or not at all, a model without a predictor is one line naming where to declare it, and the command
line splits into the command's options, config overrides and the predictor's options."""

from __future__ import annotations

import pytest

from zoo.cli.predict import split_args
from zoo.errors import ConfigError
from zoo.predict import Prediction, find_predictor, predictor_module


def test_save_writes_tables_documents_and_pictures(tmp_path):
    prediction = Prediction(
        tables={"rows": [{"a": 1, "b": 0.5}, {"a": 2, "b": 0.25}]},
        documents={"meta": {"n": 2}},
        pictures={"p.png": lambda path: path.write_bytes(b"png")},
    )
    files = prediction.save(tmp_path / "out")
    assert [f.name for f in files] == ["rows.csv", "meta.json", "p.png"]
    assert (tmp_path / "out" / "rows.csv").read_text().splitlines() == ["a,b", "1,0.5", "2,0.25"]


def test_a_failing_picture_leaves_no_folder_half_written(tmp_path):
    def broken(path):
        path.write_bytes(b"half")
        raise RuntimeError("renderer died")

    prediction = Prediction(tables={"rows": [{"a": 1}]}, pictures={"p.png": broken})
    with pytest.raises(RuntimeError):
        prediction.save(tmp_path / "out")
    assert list(tmp_path.iterdir()) == []


def test_save_never_overwrites(tmp_path):
    (tmp_path / "out").mkdir()
    with pytest.raises(ConfigError, match="exists already"):
        Prediction().save(tmp_path / "out")


def test_the_predictor_lives_beside_the_model_module():
    assert predictor_module("zoo_tasks.graphs.module:NodeClassifier") == "zoo_tasks.graphs.predict"
    assert predictor_module("zoo_tasks.rl.continual.ppo.ContinualPPO") == "zoo_tasks.rl.continual.predict"
    assert find_predictor("zoo_tasks.graphs.module.NodeClassifier").__name__ == "predict_nodes"


def test_a_model_without_a_predictor_is_one_line():
    with pytest.raises(ConfigError, match="no zoo.moe.predict module"):
        find_predictor("zoo.moe.layer.MoE")
    with pytest.raises(ConfigError, match="has no entry for it"):
        find_predictor("zoo_tasks.graphs.module.SomethingElse")


def test_the_command_line_splits_into_own_options_overrides_and_predictor_options():
    own, overrides, options = split_args(
        ["--out", "o", "--data.init_args.path=my.csv", "--model.init_args.k", "2", "--split", "val", "--flag"]
    )
    assert own == {"out": "o"}
    assert overrides == ["--data.init_args.path=my.csv", "--model.init_args.k=2"]
    assert options == ["--split", "val", "--flag"]


def test_a_bool_option_given_alone_is_true():
    from zoo.cli.predict import predictor_options

    def predictor(run, last: bool = False, split: str = "test"):
        """A predictor with a flag."""

    assert predictor_options(predictor, ["--last"]) == {"last": True, "split": "test"}
    assert predictor_options(predictor, ["--last", "--split", "val"]) == {"last": True, "split": "val"}
    assert predictor_options(predictor, ["--last", "false"]) == {"last": False, "split": "test"}
