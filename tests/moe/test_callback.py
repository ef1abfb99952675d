"""RoutingStatsCallback in a tiny real Lightning fit."""

import glob
import os

import pytorch_lightning as pl
import torch
from pytorch_lightning.loggers import CSVLogger
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from zoo.callbacks.routing_stats import RoutingStatsCallback
from zoo.moe import MoE


class Tiny(pl.LightningModule):
    def __init__(self, moe: bool = True):
        super().__init__()
        self.inp = nn.Linear(4, 8)
        self.blocks = (
            nn.ModuleList([MoE(8, 16, 4, top_k=2, aux_weights={"load_balance": 0.01}) for _ in range(2)])
            if moe
            else nn.ModuleList([nn.Linear(8, 8)])
        )
        self.out = nn.Linear(8, 1)

    def training_step(self, batch, _):
        x, y = batch
        h = self.inp(x)
        for b in self.blocks:
            h = h + b(h)
        aux = sum(b.aux_loss() for b in self.blocks if isinstance(b, MoE))
        return nn.functional.mse_loss(self.out(h), y) + aux

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.01)


def _fit(tmp_path, moe: bool):
    data = DataLoader(TensorDataset(torch.randn(32, 4), torch.randn(32, 1)), batch_size=8)
    cb = RoutingStatsCallback(log_every_n_steps=1)
    trainer = pl.Trainer(
        max_steps=4,
        logger=CSVLogger(str(tmp_path)),
        callbacks=[cb],
        accelerator="cpu",
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        log_every_n_steps=1,
        default_root_dir=str(tmp_path),
    )
    trainer.fit(Tiny(moe), data)
    return trainer, cb


def test_callback_logs_bounded_keys_and_writes_heatmaps(tmp_path):
    trainer, cb = _fit(tmp_path, moe=True)
    pngs = sorted(os.path.basename(p) for p in glob.glob(os.path.join(trainer.log_dir, "*.png")))
    assert pngs == ["expert_load_blocks.0.png", "expert_load_blocks.1.png", "expert_load_layers.png"]
    logged = [k for k in trainer.logged_metrics if k.startswith("moe/")]
    assert len(logged) == 2 * 5 and "moe/blocks.0/entropy" in logged
    assert cb.total_load["blocks.0"].sum() > 0


def test_callback_is_harmless_without_moe_layers(tmp_path):
    trainer, cb = _fit(tmp_path, moe=False)
    assert cb.written == [] and not glob.glob(os.path.join(trainer.log_dir, "*.png"))
