"""RoutingStatsCallback in a tiny real Lightning fit: routing comes from the step outputs, never from modules."""

import glob
import json
import os

import pytest
import pytorch_lightning as pl
import torch
from pytorch_lightning.loggers import CSVLogger
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from zoo.callbacks.routing_stats import SUMMARY_FILE, RoutingStatsCallback
from zoo.moe import MoE, routing_summary


class Tiny(pl.LightningModule):
    """Two MoE blocks; every step returns ``{"loss": ..., "routing": {name: Routing}}`` (``moe=False``: no routing)."""

    def __init__(self, moe: bool = True):
        super().__init__()
        self.inp = nn.Linear(4, 8)
        self.moe = moe
        self.blocks = (
            nn.ModuleList([MoE(8, 16, 4, top_k=2, aux_weights={"load_balance": 0.01}) for _ in range(2)])
            if moe
            else nn.ModuleList([nn.Linear(8, 8)])
        )
        self.out = nn.Linear(8, 1)
        self.seen: dict[str, list] = {}

    def _step(self, batch, stage):
        x, y = batch
        h = self.inp(x)
        routings, aux = {}, h.new_zeros(())
        for i, b in enumerate(self.blocks):
            if self.moe:
                out, routings[f"blocks.{i}"] = b(h)
                aux = aux + b.aux_loss(routings[f"blocks.{i}"])
            else:
                out = b(h)
            h = h + out
        loss = nn.functional.mse_loss(self.out(h), y) + aux
        if routings:
            self.seen.setdefault(stage, []).append({k: r.detach() for k, r in routings.items()})
        return {"loss": loss, "routing": routings} if routings else loss

    def training_step(self, batch, _):
        return self._step(batch, "train")

    def validation_step(self, batch, _):
        return self._step(batch, "validate")

    def test_step(self, batch, _):
        return self._step(batch, "test")

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.01)


def _data(n=32):
    return DataLoader(TensorDataset(torch.randn(n, 4), torch.randn(n, 1)), batch_size=8)


def _trainer(tmp_path, cb, **kw):
    return pl.Trainer(
        max_steps=4,
        logger=CSVLogger(str(tmp_path)),
        callbacks=[cb],
        accelerator="cpu",
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        log_every_n_steps=1,
        default_root_dir=str(tmp_path),
        **kw,
    )


def _expected(steps):
    total = None
    for routings in steps:
        s = routing_summary(routings)
        total = s if total is None else total.merge(s)
    return total.to_dict()


def test_callback_logs_bounded_keys_writes_heatmaps_and_summary(tmp_path):
    torch.manual_seed(0)
    cb = RoutingStatsCallback(log_every_n_steps=1, max_layers=1)  # logs and plots blocks.0 only; sums both
    trainer = _trainer(tmp_path, cb, limit_val_batches=2, val_check_interval=2, num_sanity_val_steps=1)
    model = Tiny()
    trainer.fit(model, _data(), _data(16))
    pngs = sorted(os.path.basename(p) for p in glob.glob(os.path.join(trainer.log_dir, "*.png")))
    assert pngs == ["expert_load_blocks.0.png", "expert_load_layers.png"]
    logged = [k for k in trainer.logged_metrics if k.startswith("moe/")]
    assert len(logged) == 5 and "moe/blocks.0/entropy" in logged
    assert len(cb.snapshots["blocks.0"]) == 4 and set(cb.snapshots) == {"blocks.0"}
    summary = json.loads((tmp_path / "lightning_logs" / "version_0" / SUMMARY_FILE).read_text())
    assert set(summary) == {"train", "validate"}
    # the callback's accumulation equals the summary of exactly the routings the steps returned
    # (sanity-check batches excluded: 2 validation rounds x 2 batches, not 5)
    assert len(model.seen["validate"]) == 1 + 2 * 2
    assert summary["train"] == _expected(model.seen["train"])
    assert summary["validate"] == _expected(model.seen["validate"][1:])
    layer = summary["train"]["blocks.0"]
    assert layer["tokens"] == 4 * 8 and layer["steps"] == 4 and sum(layer["load"]) == pytest.approx(1.0)
    assert set(summary["train"]) == {"blocks.0", "blocks.1"}  # max_layers bounds the logging, not the summary
    last = _expected(model.seen["train"][-1:])["blocks.0"]
    assert float(trainer.logged_metrics["moe/blocks.0/dead_experts"]) == last["dead_experts"]
    assert float(trainer.logged_metrics["moe/blocks.0/entropy"]) == pytest.approx(last["entropy"], abs=1e-6)

    trainer.test(model, _data(16), verbose=False)
    summary = json.loads((tmp_path / "lightning_logs" / "version_0" / SUMMARY_FILE).read_text())
    assert set(summary) == {"train", "validate", "test"}
    assert summary["test"] == _expected(model.seen["test"]) and summary["test"]["blocks.1"]["tokens"] == 16


def test_callback_is_harmless_without_routing(tmp_path):
    cb = RoutingStatsCallback(log_every_n_steps=1)
    trainer = _trainer(tmp_path, cb)
    trainer.fit(Tiny(moe=False), _data())
    trainer.test(Tiny(moe=False), _data(16), verbose=False)
    assert cb.written == [] and not glob.glob(os.path.join(str(tmp_path), "**", "*.png"), recursive=True)
    assert not glob.glob(os.path.join(str(tmp_path), "**", SUMMARY_FILE), recursive=True)
