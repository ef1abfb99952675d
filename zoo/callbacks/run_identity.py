"""Store in every checkpoint which run wrote it (model class, data class and settings, config), so that a resume
with another config is refused in one line (``zoo.cli.checkpoint_check``) instead of silently continuing."""

from __future__ import annotations

from typing import Any

import pytorch_lightning as pl

IDENTITY_KEY = "zoo_run"


class RunIdentity(pl.Callback):
    """Write ``identity`` (plain JSON data: ``{"run", "model", "model_init_args", "data", "data_init_args"}``)
    into each checkpoint under ``checkpoint["zoo_run"]``; it loads with ``torch.load(weights_only=True)``."""

    def __init__(self, identity: dict[str, Any]) -> None:
        self.identity = identity

    def on_save_checkpoint(self, trainer: pl.Trainer, pl_module: pl.LightningModule, checkpoint: dict) -> None:
        checkpoint[IDENTITY_KEY] = self.identity
