"""End to end on a slice of real ETTh1: one epoch lowers the loss, and the test pass logs the clean and
corrupted metrics plus the routing / replacement diagnostics; a run killed mid-epoch resumes to the same weights;
the task spec and its tables are complete."""

from __future__ import annotations

import pytest
import pytorch_lightning as pl
import torch
import yaml
from pytorch_lightning.callbacks import ModelCheckpoint

from zoo.callbacks.rng_state import RNGStateCheckpoint
from zoo.leaderboard.record import RunRecord
from zoo.registry import get_task
from zoo_tasks.timeseries.data import ForecastingDataModule
from zoo_tasks.timeseries.seer import SEERForecaster
from zoo_tasks.timeseries.spec import DATASETS, HORIZONS, METHODS, SEER
from zoo_tasks.timeseries.tables import seer_tables


def _trainer(**kw) -> pl.Trainer:
    options = dict(
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
        inference_mode=False,
    )
    return pl.Trainer(**{**options, **kw})


def test_one_epoch_on_an_etth1_slice_lowers_the_loss(data_mirror):
    pl.seed_everything(0)
    dm = ForecastingDataModule(
        file="ETTh1.csv", dataset="ETT-small", data_dir=str(data_mirror / "ETT-small"), pred_len=24, batch_size=32
    )
    model = SEERForecaster(pred_len=24, d_model=32, n_heads=4, d_ff=64, lr=1e-3)
    trainer = _trainer(max_epochs=1, limit_train_batches=40, limit_val_batches=6, limit_test_batches=2)
    before = trainer.validate(model, dm, verbose=False)[0]["val/loss"]
    trainer.fit(model, dm)
    after = trainer.validate(model, dm, verbose=False)[0]["val/loss"]
    assert after < 0.95 * before

    results = trainer.test(model, dm, verbose=False)[0]
    for name in ("mse", "mae", "mse_missing", "mse_spike", "mse_noise", "mae_noise"):
        assert f"test/{name}" in results
    assert results["test/mse_spike"] > results["test/mse"]  # 5-std spikes hurt an undertrained model
    extra = model.extra_results()
    clean = extra["diagnostics"]["clean"]
    assert len(clean["expert_load"]) == 8 and abs(sum(clean["expert_load"]) - 1) < 1e-3
    assert 0.0 <= clean["replaced_fraction"] <= 1.0
    assert set(extra["diagnostics"]) == {"clean", "missing", "spike", "noise"}


def test_spec_rows_configs_and_published_numbers():
    assert get_task("seer") is not None
    assert len(SEER.benchmark) == len(DATASETS) * len(HORIZONS) * len(METHODS) == 60
    for row in SEER.benchmark:
        config = yaml.safe_load(SEER.config_path(row.config).read_text())
        ds, horizon = row.dataset.split("/")
        assert config["model"]["init_args"]["pred_len"] == config["data"]["init_args"]["pred_len"] == int(horizon)
        assert config["data"]["init_args"]["file"].lower().startswith(ds.lower())
        assert config["model"]["init_args"]["num_channels"] == (21 if ds == "Weather" else 7)
        if row.method == "dense":
            assert config["model"]["init_args"]["moe_embedding"] is False
        if row.method in ("seer", "patchtst"):
            assert row.published and row.published_source
        assert row.reduced == ("--trainer.max_epochs" in row.overrides)


def _record(method, dataset, mse, **extra_metrics):
    metrics = {"test/mse": mse, "test/mae": mse, **extra_metrics}
    return RunRecord(
        task="seer",
        method=method,
        dataset=dataset,
        metrics=metrics,
        seed=0,
        config={},
        versions={},
        wall_time_s=1.0,
        commit="",
        machine={},
    )


def test_tables_judge_the_targets():
    records = [
        _record("seer", "ETTh1/96", 0.380, **{"test/mse_noise": 0.40}),  # below both published (0.386, 0.414)
        _record("dense", "ETTh1/96", 0.390, **{"test/mse_noise": 0.45}),
        _record("seer", "ETTh1/192", 0.450),  # above iTransformer's 0.441
        _record("dense", "ETTh1/192", 0.440),
        _record("seer", "ETTh1/336", 0.48704),  # ties iTransformer's 0.487 at the printed precision
        _record("seer", "ETTh1/720", 0.5006),  # 0.501 > PatchTST's 0.500
    ]
    text = seer_tables(records)
    assert "| ETTh1/96 | 0.380 / 0.380 | 0.390 / 0.390 | — / — | 0.386 / 0.405 | 0.414 / 0.419 | ✓ |" in text
    assert "| ETTh1/192 |" in text and "| ✗ |" in text
    assert "| ETTh1/336 | 0.487 / 0.487 | — / — | — / — | 0.487 / 0.458 | 0.501 / 0.466 | ✓ |" in text
    assert "| ETTh1/720 | 0.501 / 0.501 | — / — | — / — | 0.503 / 0.491 | 0.500 / 0.488 | ✗ |" in text
    assert "ETT cells meeting the target: 2 of 4 run (of 16)." in text
    assert "| noise | 0.400 | 0.450 | 1 of 1 |" in text


def test_page_marks_wall_times_that_miss_the_time_before_a_restart():
    from zoo.leaderboard.render import render_task

    old_resume = _record("seer", "ETTh1/96", 0.38)
    old_resume.extra = {"resumed_from_checkpoint": True}  # written before checkpoints carried the elapsed time
    new_resume = _record("dense", "ETTh1/96", 0.39)
    new_resume.extra = {"resumed_from_checkpoint": True, "wall_time_before_resume_s": 120.0}
    page = render_task(SEER, [old_resume, new_resume])
    assert "| ETTh1/96 | 1.000 (n=1) ‡ | 1.000 (n=1) |" in page
    assert "covers only the last process" in page
    assert "‡" not in render_task(SEER, [new_resume])


class _KillAtStep(pl.Callback):
    """Stands in for a SIGKILL: training stops before this step, with last.ckpt as the periodic save left it."""

    def __init__(self, step: int):
        self.step = step

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        if trainer.global_step == self.step:
            raise RuntimeError("killed")


@pytest.mark.parametrize("kill_at", [7, 13])  # mid-epoch 0; mid-epoch 1 after an end-of-epoch save
def test_a_run_killed_mid_epoch_resumes_to_the_uninterrupted_weights(data_mirror, tmp_path, kill_at):
    def fit(root, kill_at=None, ckpt_path=None):
        pl.seed_everything(0)
        dm = ForecastingDataModule(
            file="ETTh1.csv", dataset="ETT-small", data_dir=str(data_mirror / "ETT-small"), pred_len=24, batch_size=32
        )
        model = SEERForecaster(pred_len=24, d_model=16, n_heads=2, d_ff=32, lr=1e-3, checkpoint_every_s=1e-9)
        callbacks = [ModelCheckpoint(dirpath=root, save_last=True), RNGStateCheckpoint()]
        trainer = _trainer(
            enable_checkpointing=True,
            max_epochs=2,
            limit_train_batches=10,
            limit_val_batches=2,
            callbacks=callbacks + ([_KillAtStep(kill_at)] if kill_at else []),
        )
        trainer.fit(model, dm, ckpt_path=ckpt_path, weights_only=True)
        return model, trainer

    uninterrupted, _ = fit(tmp_path / "full")
    with pytest.raises(RuntimeError, match="killed"):
        fit(tmp_path / "killed", kill_at=kill_at)
    last = torch.load(tmp_path / "killed" / "last.ckpt", weights_only=True)
    assert last["global_step"] == kill_at  # the periodic save wrote last.ckpt after the step before
    resumed, trainer = fit(tmp_path / "killed", ckpt_path=str(tmp_path / "killed" / "last.ckpt"))
    assert trainer.global_step == 20
    assert sorted(p.name for p in (tmp_path / "killed").glob("last*")) == ["last.ckpt"]  # no stale last-v1.ckpt
    for (name, a), b in zip(uninterrupted.state_dict().items(), resumed.state_dict().values()):
        assert torch.equal(a, b), name
