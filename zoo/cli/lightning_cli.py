"""`ZooCLI`: LightningCLI with the project's defaults: any registered LightningModule / LightningDataModule by
``class_path``, checkpoints that survive a restart, a NaN guard, RNG state in checkpoints, run metadata,
routing stats for MoE layers, and ``weights_only=True`` checkpoint loading unless the user opts out."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytorch_lightning as pl
from pytorch_lightning.callbacks import ModelCheckpoint
from pytorch_lightning.cli import LightningCLI

from zoo.callbacks.nan_guard import NaNGuard
from zoo.callbacks.rng_state import RNGStateCheckpoint
from zoo.callbacks.run_metadata import RunMetadata


def _routing_stats_callback() -> list[pl.Callback]:
    try:
        from zoo.callbacks.routing_stats import RoutingStatsCallback
    except ImportError:
        return []
    return [RoutingStatsCallback()]


class ZooCLI(LightningCLI):
    """The ``zoo fit|validate|test|predict`` command (see ``zoo --help``).

    Checkpoints go to ``<default_root_dir>/checkpoints`` (``last.ckpt`` every epoch, plus the best one when
    the module names a ``checkpoint_monitor``), a folder that does not change between restarts, so
    ``--ckpt_path last`` resumes a killed run.
    """

    def __init__(self, args: list[str] | None = None, run: bool = True, **kwargs: Any) -> None:
        kwargs.setdefault("save_config_kwargs", {"overwrite": True})
        kwargs.setdefault("parser_kwargs", {"prog": "zoo"})
        super().__init__(
            pl.LightningModule,
            pl.LightningDataModule,
            subclass_mode_model=True,
            subclass_mode_data=True,
            args=args,
            run=run,
            auto_configure_optimizers=True,
            **kwargs,
        )

    def _instantiate_trainer(self, config: dict[str, Any], callbacks: list[pl.Callback]) -> pl.Trainer:
        present = [type(c) for c in (config.get("callbacks") or []) + callbacks]
        root = Path(config.get("default_root_dir") or os.getcwd())
        if config.get("enable_checkpointing", True) is not False and ModelCheckpoint not in present:
            monitor = getattr(self.model, "checkpoint_monitor", None)
            callbacks.append(
                ModelCheckpoint(
                    dirpath=root / "checkpoints",
                    save_last=True,
                    monitor=monitor,
                    mode=getattr(self.model, "checkpoint_mode", "min"),
                    filename="best-{epoch}-{step}" if monitor else "epoch{epoch}-step{step}",
                    auto_insert_metric_name=False,
                )
            )
        seed = self._get(self.config, "seed_everything")
        for cb in [
            NaNGuard(),
            RNGStateCheckpoint(),
            RunMetadata(seed if isinstance(seed, int) else None),
            *_routing_stats_callback(),
        ]:
            if type(cb) not in present:
                callbacks.append(cb)
        return super()._instantiate_trainer(config, callbacks)

    def _prepare_subcommand_kwargs(self, subcommand: str) -> dict[str, Any]:
        kwargs = super()._prepare_subcommand_kwargs(subcommand)
        if "weights_only" in self._subcommand_method_arguments[subcommand] and kwargs.get("weights_only") is None:
            kwargs["weights_only"] = True
        return kwargs
