"""Track the best value of the module's ``checkpoint_monitor`` over a fit, with or without checkpointing, for the
summary ``zoo fit`` prints at the end."""

from __future__ import annotations

import math

import pytorch_lightning as pl


class BestMetric(pl.Callback):
    """After each validation (sanity checks excluded) keep the validation metrics and the best ``monitor`` value
    (``mode`` "min" or "max") with its epoch. The best survives a resume (it is in the checkpoint)."""

    def __init__(self, monitor: str | None, mode: str = "min") -> None:
        self.monitor, self.mode = monitor, mode
        self.best: float | None = None
        self.best_epoch: int | None = None
        self.last: dict[str, float] = {}

    def state_dict(self) -> dict:
        return {"best": self.best, "best_epoch": self.best_epoch}

    def load_state_dict(self, state_dict: dict) -> None:
        self.best, self.best_epoch = state_dict.get("best"), state_dict.get("best_epoch")

    def on_validation_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if trainer.sanity_checking:
            return
        metrics = {k: float(v) for k, v in trainer.callback_metrics.items() if getattr(v, "numel", lambda: 0)() == 1}
        self.last = {k: v for k, v in metrics.items() if k.startswith("val")}
        value = metrics.get(self.monitor) if self.monitor else None
        if value is None or math.isnan(value):
            return
        if self.best is None or (value > self.best if self.mode == "max" else value < self.best):
            self.best, self.best_epoch = value, trainer.current_epoch
