"""MILModule (tasks/mil/module.py) end to end: the loss decreases on real MUSK1 bags, one `zoo reproduce` run of the
spec (config -> ZooCLI -> fit -> test -> record) works and saves the dispatch plot, and the digits main job
validates, keeps its best checkpoint and tests it."""

from __future__ import annotations

from pathlib import Path

import pytest
import pytorch_lightning as pl
import torch
from zoo_testing import quiet_trainer

from zoo.leaderboard.draw import draw_tables
from zoo_tasks.mil.mil_data import MUSK1DataModule
from zoo_tasks.mil.module import MILModule


class _LossHistory(pl.Callback):
    def __init__(self) -> None:
        self.losses: list[float] = []

    def on_train_epoch_end(self, trainer, pl_module) -> None:
        self.losses.append(float(trainer.callback_metrics["train/loss"]))


def test_smoke_fit_loss_decreases(data_mirror):
    pl.seed_everything(0, verbose=False)
    history = _LossHistory()
    model = MILModule(166, aggregator="gated_abmil", projection="mammoth", lr=2e-3, plot_bags=0)
    trainer = quiet_trainer(max_epochs=6, callbacks=[history])
    data = MUSK1DataModule(fold=0, repeat=0, batch_size=16)
    trainer.fit(model, data)
    assert history.losses[-1] < 0.8 * history.losses[0], history.losses
    result = trainer.test(model, data, verbose=False)[0]
    assert result["test/acc"] >= 0.7 and result["test/auc"] >= 0.7  # fold 0 of MUSK1 (10 bags), well above chance
    assert model.extra_results()["train_epoch_s"] > 0
    assert model.extra_results()["projection_params"] == sum(p.numel() for p in model.projection.parameters())


def test_reproduce_one_row_through_the_cli(data_mirror, tmp_path):
    from zoo.registry import get_task
    from zoo.runner.reproduce import run_one

    spec = get_task("mammoth")
    row = next(r for r in spec.benchmark if r.method == "ABMIL+MAMMOTH" and r.dataset == "MUSK1")
    assert len({(r.method, r.dataset) for r in spec.benchmark}) == 45
    assert sum(len(r.runs()) for r in spec.benchmark if (r.method, r.dataset) == (row.method, row.dataset)) == 50
    torch.manual_seed(0)
    record = run_one(spec, row, seed=1, fold=3, quick=True, run_dir=tmp_path / "run")
    assert set(record.metrics) >= {"test/acc", "test/auc"}
    assert record.fold == 3 and record.reduced
    assert record.config["data"]["init_args"]["fold"] == 3
    assert record.config["model"]["init_args"]["in_dim"] == 166  # the config leaves it to the data, as recorded
    assert record.config["data"]["init_args"]["standardize"] == "zscore"  # the records' rule, pinned
    assert record.extra["rank"] >= 1 and (tmp_path / "run").is_dir()
    assert record.extra["dispatch_plot"].endswith("dispatch.png")
    assert Path(record.extra["dispatch_plot"]).stat().st_size > 1000
    page = draw_tables(spec, [record])
    assert "### MUSK1" in page and "| ABMIL | 1 |" in page and "Δ acc" in page


def test_main_job_config_validates_keeps_the_best_checkpoint_and_tests(tmp_path, monkeypatch):
    """configs/mammoth/digits.yaml (the README's main job) has validation and test bags, a best-val/loss checkpoint
    and a progress bar; the benchmark rows run the same config without validation bags or checkpoints."""
    import yaml

    from zoo.cli.lightning_cli import ZooCLI
    from zoo.registry import get_task

    spec = get_task("mammoth")
    config = spec.config_path("digits.yaml")
    trainer_cfg = yaml.safe_load(Path(config).read_text())["trainer"]
    assert trainer_cfg["enable_progress_bar"] and trainer_cfg["enable_checkpointing"]
    monkeypatch.chdir(tmp_path)
    args = ["--config", str(config), "--trainer.max_epochs", "2", "--trainer.enable_progress_bar", "false"]
    args += ["--trainer.default_root_dir", str(tmp_path), "--model.init_args.plot_bags", "0"]
    cli = ZooCLI(args=args, run=False)
    cli.trainer.fit(cli.model, datamodule=cli.datamodule)
    assert len(cli.datamodule.val_idx) == 20 and "val/loss" in cli.trainer.callback_metrics
    best = cli.trainer.checkpoint_callback
    assert best.monitor == "val/loss" and Path(best.best_model_path).is_file()
    result = cli.trainer.test(cli.model, datamodule=cli.datamodule, ckpt_path="best", verbose=False)[0]
    assert set(result) >= {"test/loss", "test/acc", "test/auc"} and len(cli.datamodule.test_idx) == 15
    row = next(r for r in spec.benchmark if r.dataset == "Digits-bags")
    protocol = dict(zip(row.overrides[::2], row.overrides[1::2]))
    assert protocol["--data.init_args.num_val_bags"] == "0" and protocol["--trainer.enable_checkpointing"] == "false"


def test_in_dim_none_builds_the_model_from_the_datamodule_as_an_explicit_in_dim_does(tmp_path):
    """Without ZooCLI (which fills in_dim from model_shapes()), a model with in_dim=None builds its layers at setup
    from the datamodule's feature width; the checkpointed hyper-parameters hold that width."""
    import numpy as np

    from zoo.errors import ConfigError
    from zoo_tasks.mil.mil_data import FeatureBagsDataModule

    rng = np.random.default_rng(0)
    ids = np.repeat(np.arange(12), 3)
    np.savez(tmp_path / "b.npz", features=rng.normal(size=(36, 5)), bag_ids=ids, labels=ids % 2)
    data = FeatureBagsDataModule(str(tmp_path / "b.npz"), num_folds=3, batch_size=4)
    small = dict(aggregator="mean", projection="mammoth", dim=8, num_experts=2, num_slots=2, num_heads=2, slot_dim=4)
    torch.manual_seed(0)
    explicit = MILModule(in_dim=5, rank=2, plot_bags=0, **small)
    torch.manual_seed(0)
    inferred = MILModule(in_dim=None, rank=2, plot_bags=0, **small)
    trainer = pl.Trainer(max_epochs=1, logger=False, enable_checkpointing=False, enable_progress_bar=False)
    trainer.fit(inferred, data)
    assert inferred.hparams.in_dim == 5
    assert list(inferred.state_dict()) == list(explicit.state_dict())  # same keys, in the same order
    with pytest.raises(ConfigError, match="model.in_dim is not set"):
        MILModule(in_dim=None, plot_bags=0, **small).setup("fit")
