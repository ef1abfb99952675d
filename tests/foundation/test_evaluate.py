"""``zoo evaluate``: a config run with the benchmark protocol (seeds × folds when the datamodule has folds, seeds
otherwise), test metrics averaged, a JSON summary beside the runs under ``runs/evaluate/``, resumable."""

from __future__ import annotations

import json
import statistics

import pytest
import pytorch_lightning as pl
import torch
import yaml
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from zoo.cli.evaluate import evaluate_main
from zoo.cli.main import HELP, main
from zoo.errors import ConfigError
from zoo.runner.evaluation import evaluation_name


class SeedData(pl.LightningDataModule):
    """A fixed regression set; test rows 0..7, train the rest."""

    def __init__(self, rows: int = 24):
        super().__init__()
        g = torch.Generator().manual_seed(0)
        self.x = torch.randn(rows, 3, generator=g)
        self.y = self.x.sum(1, keepdim=True)

    def _loader(self, idx):
        return DataLoader(TensorDataset(self.x[idx], self.y[idx]), batch_size=8)

    def test_index(self):
        return torch.arange(8)

    def train_dataloader(self):
        mask = torch.ones(len(self.x), dtype=torch.bool)
        mask[self.test_index()] = False
        return self._loader(mask.nonzero().squeeze(1))

    def val_dataloader(self):
        return self.train_dataloader()

    def test_dataloader(self):
        return self._loader(self.test_index())

    def data_sha256(self) -> dict[str, str]:
        return {"rows.csv": "ab" * 32}


class FoldData(SeedData):
    """``fold`` of ``num_folds`` contiguous test blocks."""

    def __init__(self, fold: int = 0, num_folds: int = 3, rows: int = 24):
        super().__init__(rows)
        self.fold, self.num_folds = fold, num_folds

    def test_index(self):
        size = len(self.x) // self.num_folds
        return torch.arange(self.fold * size, (self.fold + 1) * size)


class Regressor(pl.LightningModule):
    checkpoint_monitor = "val/loss"

    def __init__(self, lr: float = 0.05):
        super().__init__()
        self.lr = lr
        self.net = nn.Linear(3, 1)

    def _loss(self, batch):
        x, y = batch
        return nn.functional.mse_loss(self.net(x), y)

    def training_step(self, batch, batch_idx):
        return self._loss(batch)

    def validation_step(self, batch, batch_idx):
        self.log("val/loss", self._loss(batch))

    def test_step(self, batch, batch_idx):
        self.log("test/mse", self._loss(batch))

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.lr)


def _config(tmp_path, data: str) -> str:
    config = {
        "model": {"class_path": f"{__name__}.Regressor"},
        "data": {"class_path": f"{__name__}.{data}"},
        "trainer": {"max_epochs": 2, "enable_progress_bar": False, "logger": False},
    }
    path = tmp_path / f"{data.lower()}.yaml"
    path.write_text(yaml.safe_dump(config))
    return str(path)


def _results(base):
    return {p.parent.name: json.loads(p.read_text()) for p in base.glob("*/result.json")}


def test_folds_times_seeds_summary_and_resume(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    args = ["--config", _config(tmp_path, "FoldData"), "--seeds", "0", "1", "--name", "cv"]
    assert evaluate_main(args) == 0
    base = tmp_path / "runs" / "evaluate" / "cv"
    results = _results(base)
    assert sorted(results) == [f"seed{s}__fold{f}" for s in (0, 1) for f in range(3)]
    # each fold tests its own block: different test sets give different errors
    assert len({round(r["metrics"]["test/mse"], 6) for r in results.values() if r["seed"] == 0}) == 3
    for r in results.values():
        assert r["tested"] == "best" and r["config"]["data"]["init_args"]["fold"] == r["fold"]
    summary = json.loads((base / "summary.json").read_text())
    values = [r["metrics"]["test/mse"] for r in results.values()]
    stats = summary["metrics"]["test/mse"]
    assert stats["n"] == 6 and stats["mean"] == pytest.approx(statistics.fmean(values))
    assert stats["std"] == pytest.approx(statistics.stdev(values))
    assert summary["data_sha256"] == {"rows.csv": "ab" * 32} and summary["folds"] == 3
    out = capsys.readouterr().out
    assert "test/mse" in out and "±" in out and "n=6 of 6" in out
    assert not (tmp_path / "leaderboard").exists()

    # a second call trains nothing; a run killed after its checkpoint resumes from it
    stamps = {k: (base / k / "result.json").stat().st_mtime_ns for k in results}
    (base / "seed1__fold2" / "result.json").unlink()
    assert evaluate_main(args) == 0
    again = _results(base)
    assert again["seed1__fold2"]["extra"]["resumed_from_checkpoint"] is True
    assert all((base / k / "result.json").stat().st_mtime_ns == t for k, t in stamps.items() if k != "seed1__fold2")
    assert "done before" in capsys.readouterr().out


def test_seeds_only_without_folds_and_folds_refused(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    config = _config(tmp_path, "SeedData")
    assert evaluate_main(["--config", config, "--seeds", "3", "4", "--model.init_args.lr", "0.1"]) == 0
    (base,) = (tmp_path / "runs" / "evaluate").iterdir()
    # named from the config and a hash of the other options: another --data.init_args.path is another folder
    assert base.name == evaluation_name([config], ["--model.init_args.lr", "0.1"]) != evaluation_name([config], [])
    assert base.name.startswith(f"{tmp_path.name}-seeddata-")
    assert sorted(_results(base)) == ["seed3", "seed4"]
    assert all(r["config"]["model"]["init_args"]["lr"] == 0.1 for r in _results(base).values())
    with pytest.raises(ConfigError, match="--folds 5: .*no `fold`"):
        evaluate_main(["--config", config, "--folds", "5"])
    # through the `zoo` command: the same refusal is one line and exit code 2
    assert main(["evaluate", "--config", config, "--folds", "5"]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_folds_option_sets_num_folds(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["evaluate", "--config", _config(tmp_path, "FoldData"), "--seeds", "0", "--folds", "2"]) == 0
    (base,) = (tmp_path / "runs" / "evaluate").iterdir()
    results = _results(base)
    assert sorted(results) == ["seed0__fold0", "seed0__fold1"]
    assert {r["config"]["data"]["init_args"]["num_folds"] for r in results.values()} == {2}


def test_evaluate_is_in_zoo_help():
    assert "evaluate --config FILE" in HELP and "runs/evaluate/" in HELP


def test_an_edited_config_or_changed_data_is_never_averaged_with_old_runs(tmp_path):
    from zoo.runner.evaluation import check_same_data

    config = tmp_path / "c.yaml"
    config.write_text("model: {}\n")
    before = evaluation_name([str(config)], [])
    config.write_text("model: {init_args: {lr: 0.1}}\n")
    assert evaluation_name([str(config)], []) != before  # finished runs of the old config are not reused

    def result(seed, digest):
        return {"seed": seed, "fold": None, "extra": {"data_sha256": {"my.csv": digest}}}

    check_same_data([result(0, "a" * 64), result(1, "a" * 64)], tmp_path)
    with pytest.raises(ConfigError, match="runs seed0 and seed1 read different data"):
        check_same_data([result(0, "a" * 64), result(1, "b" * 64)], tmp_path)
