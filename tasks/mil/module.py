"""LightningModule for binary MIL: [instance encoder] -> projection (linear | MAMMOTH) -> aggregator -> bag logit."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytorch_lightning as pl
import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torchmetrics.classification import BinaryAccuracy, BinaryAUROC

from zoo.errors import ConfigError
from zoo.registry import repository_root
from zoo_tasks.mil.aggregators import make_aggregator
from zoo_tasks.mil.encoders import DigitsEncoder
from zoo_tasks.mil.mammoth import Mammoth

PROJECTIONS = ("linear", "mammoth", "mammoth_pkg")
ENCODERS = ("none", "digits_cnn")


class MILModule(pl.LightningModule):
    """A MIL classifier whose task-specific linear layer can be swapped for MAMMOTH (ICLR 2026).

    ``projection="linear"`` is the standard MIL layer ``ReLU(Dropout(W x + b))`` (the dense baseline);
    ``"mammoth"`` is :class:`zoo_tasks.mil.mammoth.Mammoth` with about the same parameter count;
    ``"mammoth_pkg"`` is the published ``mammoth-moe`` module (:class:`zoo_tasks.mil.mammoth_pkg.PackageMammoth`).
    The aggregator is one of ``zoo_tasks.mil.aggregators.AGGREGATORS`` (mean, max, abmil, gated_abmil, dsmil).

    Batches are dicts from :mod:`zoo_tasks.mil.mil_data`: ``x`` (B, N, in_dim), ``mask`` (B, N), ``y`` (B,).
    Logs ``train/loss`` and ``test/{loss,acc,auc}`` (bag level). No model selection: the last epoch is tested.
    """

    def __init__(
        self,
        in_dim: int,
        aggregator: str = "abmil",
        projection: str = "linear",
        dim: int = 128,
        encoder: str = "none",
        num_experts: int = 8,
        num_slots: int = 4,
        num_heads: int = 4,
        slot_dim: int = 64,
        rank: int | None = None,
        dropout: float = 0.1,
        aggregator_dropout: float = 0.0,
        lr: float = 5e-4,
        weight_decay: float = 1e-4,
        plot_bags: int = 3,
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        if projection not in PROJECTIONS:
            raise ConfigError(f"unknown projection {projection!r}; valid: {', '.join(PROJECTIONS)}")
        if encoder not in ENCODERS:
            raise ConfigError(f"unknown encoder {encoder!r}; valid: {', '.join(ENCODERS)}")
        self.encoder = DigitsEncoder() if encoder == "digits_cnn" else None
        feat_dim = DigitsEncoder.out_dim if self.encoder is not None else in_dim
        moe_args = dict(num_experts=num_experts, num_slots=num_slots, num_heads=num_heads, slot_dim=slot_dim)
        if projection == "linear":
            self.projection = nn.Sequential(nn.Linear(feat_dim, dim), nn.ReLU(), nn.Dropout(dropout))
        elif projection == "mammoth":
            self.projection = Mammoth(feat_dim, dim, rank=rank, dropout=dropout, **moe_args)
        else:
            from zoo_tasks.mil.mammoth_pkg import PackageMammoth

            self.projection = PackageMammoth(feat_dim, dim, dropout=dropout, **moe_args)
        self.aggregator = make_aggregator(aggregator, dim, dropout=aggregator_dropout)
        self.test_acc, self.test_auc = BinaryAccuracy(), BinaryAUROC()
        self._epoch_start = 0.0
        self._epoch_times: list[float] = []
        self._plot_batch: dict[str, Tensor] | None = None
        self._plot_path: str | None = None

    def forward(self, x: Tensor, mask: Tensor) -> tuple[Tensor, Tensor | None]:
        """(B, N, in_dim), (B, N) bool -> bag logits (B,), instance scores (B, N) or None."""
        if self.encoder is not None:
            b, n, _ = x.shape
            x = self.encoder(x.reshape(b * n, -1)).reshape(b, n, -1)
        if isinstance(self.projection, nn.Sequential):
            h = self.projection(x)
        else:
            h = self.projection(x, mask)
        return self.aggregator(h, mask)

    def training_step(self, batch: dict[str, Tensor], batch_idx: int) -> Tensor:
        logits, _ = self(batch["x"], batch["mask"])
        loss = F.binary_cross_entropy_with_logits(logits, batch["y"])
        self.log("train/loss", loss, on_step=False, on_epoch=True, batch_size=len(batch["y"]))
        return loss

    def test_step(self, batch: dict[str, Tensor], batch_idx: int) -> None:
        logits, _ = self(batch["x"], batch["mask"])
        y = batch["y"]
        probs = torch.sigmoid(logits)
        self.test_acc.update(probs, y.long())
        self.test_auc.update(probs, y.long())
        self.log("test/loss", F.binary_cross_entropy_with_logits(logits, y), batch_size=len(y))
        self.log("test/acc", self.test_acc, batch_size=len(y))
        self.log("test/auc", self.test_auc, batch_size=len(y))
        if batch_idx == 0 and self.hparams.plot_bags > 0 and self.hparams.projection != "linear":
            pos, neg = (y == 1).nonzero().flatten().tolist(), (y == 0).nonzero().flatten().tolist()
            pick = (pos[:1] + neg[:1] + pos[1:] + neg[1:])[: self.hparams.plot_bags]  # both classes when present
            self._plot_batch = {k: v[pick].cpu() for k, v in batch.items()}
            self._plot_batch["probs"] = probs[pick].cpu()
            dispatch = self._dispatch_per_bag(batch["mask"])
            self._plot_batch["dispatch"] = [dispatch[i] for i in pick]

    def _dispatch_per_bag(self, mask: Tensor) -> list[np.ndarray]:
        """The last forward's dispatch weights as one (n_i, E, H, S) array per bag (real instances only)."""
        dispatch = self.projection.last_dispatch
        if isinstance(dispatch, list):
            return [d.cpu().numpy() for d in dispatch]
        return [dispatch[i, mask[i]].cpu().numpy() for i in range(dispatch.shape[0])]

    def on_test_end(self) -> None:
        if self._plot_batch is None or self.trainer is None:
            return
        from zoo_tasks.mil.plots import plot_dispatch

        folder = Path(self.trainer.log_dir or self.trainer.default_root_dir).absolute()
        path = plot_dispatch(self._plot_batch, folder / "dispatch.png")
        root = repository_root()
        self._plot_path = str(path.relative_to(root) if path.is_relative_to(root) else path)

    def on_train_epoch_start(self) -> None:
        self._epoch_start = time.perf_counter()

    def on_train_epoch_end(self) -> None:
        self._epoch_times.append(time.perf_counter() - self._epoch_start)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr, weight_decay=self.hparams.weight_decay)

    def extra_results(self) -> dict:
        """Projection size and rank, median seconds per training epoch, and the dispatch plot's path."""
        projection_params = sum(p.numel() for p in self.projection.parameters())
        return {
            "projection_params": projection_params,
            "rank": getattr(self.projection, "rank", None),
            "num_params": sum(p.numel() for p in self.parameters()),
            "train_epoch_s": float(np.median(self._epoch_times)) if self._epoch_times else None,
            "dispatch_plot": self._plot_path,
        }
