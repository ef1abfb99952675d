"""The forecasting loop (tasks/timeseries/forecaster.py) end to end on a slice of real ETTh1: one epoch lowers the
loss; the test pass logs the clean and corrupted metrics and the replacement diagnostics, and the routing-stats
callback writes the patch mixture's routing summary from the routings the steps return; a run killed mid-epoch
resumes to the same weights."""

from __future__ import annotations

import json

import pytest
import pytorch_lightning as pl
import torch
from pytorch_lightning.callbacks import ModelCheckpoint
from zoo_testing import KillAtStep, Killed, quiet_trainer

from zoo.callbacks.rng_state import RNGStateCheckpoint
from zoo.callbacks.routing_stats import SUMMARY_FILE, RoutingStatsCallback
from zoo_tasks.timeseries.data import ForecastingDataModule
from zoo_tasks.timeseries.seer import SEERForecaster


def test_one_epoch_on_an_etth1_slice_lowers_the_loss(data_mirror, tmp_path):
    pl.seed_everything(0)
    dm = ForecastingDataModule(
        file="ETTh1.csv", dataset="ETT-small", data_dir=str(data_mirror / "ETT-small"), pred_len=24, batch_size=32
    )
    model = SEERForecaster(pred_len=24, num_channels=7, d_model=32, n_heads=4, d_ff=64, lr=1e-3)
    stats = RoutingStatsCallback(heatmaps=False)
    trainer = quiet_trainer(
        inference_mode=False,
        max_epochs=1,
        limit_train_batches=40,
        limit_val_batches=6,
        limit_test_batches=2,
        callbacks=[stats],
        default_root_dir=tmp_path,
    )
    before = trainer.validate(model, dm, verbose=False)[0]["val/loss"]
    trainer.fit(model, dm)
    after = trainer.validate(model, dm, verbose=False)[0]["val/loss"]
    assert after < 0.95 * before

    results = trainer.test(model, dm, verbose=False)[0]
    for name in ("mse", "mae", "mse_missing", "mse_spike", "mse_noise", "mae_noise"):
        assert f"test/{name}" in results
    assert results["test/mse_spike"] > results["test/mse"]  # 5-std spikes hurt an undertrained model
    extra = model.extra_results()
    assert set(extra["diagnostics"]) == {"clean", "missing", "spike", "noise"}
    assert all(0.0 <= d["replaced_fraction"] <= 1.0 for d in extra["diagnostics"].values())
    assert not any("expert_load" in d for d in extra["diagnostics"].values())  # routing stats: the callback's job
    summary = json.loads((tmp_path / SUMMARY_FILE).read_text())
    assert set(summary) == {"train", "validate", "test"}
    test = summary["test"]["net.embedding.moe"]
    assert len(test["load"]) == 8 and abs(sum(test["load"]) - 1) < 1e-3
    assert (
        test["tokens"] == 2 * 32 * 7 * 12
    )  # clean test batches only: 2 batches x 32 windows x 7 channels x 12 patches


@pytest.mark.parametrize("kill_at", [7, 13])  # mid-epoch 0; mid-epoch 1 after an end-of-epoch save
def test_a_run_killed_mid_epoch_resumes_to_the_uninterrupted_weights(data_mirror, tmp_path, kill_at):
    def fit(root, kill_at=None, ckpt_path=None):
        pl.seed_everything(0)
        dm = ForecastingDataModule(
            file="ETTh1.csv", dataset="ETT-small", data_dir=str(data_mirror / "ETT-small"), pred_len=24, batch_size=32
        )
        model = SEERForecaster(
            pred_len=24, num_channels=7, d_model=16, n_heads=2, d_ff=32, lr=1e-3, checkpoint_every_s=1e-9
        )
        callbacks = [ModelCheckpoint(dirpath=root, save_last=True), RNGStateCheckpoint()]
        trainer = quiet_trainer(
            inference_mode=False,
            enable_checkpointing=True,
            max_epochs=2,
            limit_train_batches=10,
            limit_val_batches=2,
            callbacks=callbacks + ([KillAtStep(kill_at)] if kill_at else []),
        )
        trainer.fit(model, dm, ckpt_path=ckpt_path, weights_only=True)
        return model, trainer

    uninterrupted, _ = fit(tmp_path / "full")
    with pytest.raises(Killed):
        fit(tmp_path / "killed", kill_at=kill_at)
    last = torch.load(tmp_path / "killed" / "last.ckpt", weights_only=True)
    assert last["global_step"] == kill_at  # the periodic save wrote last.ckpt after the step before
    resumed, trainer = fit(tmp_path / "killed", ckpt_path=str(tmp_path / "killed" / "last.ckpt"))
    assert trainer.global_step == 20
    assert sorted(p.name for p in (tmp_path / "killed").glob("last*")) == ["last.ckpt"]  # no stale last-v1.ckpt
    for (name, a), b in zip(uninterrupted.state_dict().items(), resumed.state_dict().values()):
        assert torch.equal(a, b), name
