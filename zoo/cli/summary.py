"""The few lines every ``zoo fit`` ends with: the best validation metric and its checkpoint, test metrics (or the
command that gets them), and where the run folder and logs are."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytorch_lightning as pl
from pytorch_lightning.utilities.model_helpers import is_overridden

from zoo.callbacks.best_metric import BestMetric
from zoo.cli.run_dir import shown


def _fmt(metrics: dict[str, float], limit: int = 4) -> str:
    return ", ".join(f"{k} {v:.4g}" for k, v in list(sorted(metrics.items()))[:limit])


def has_test_split(datamodule: pl.LightningDataModule | None, model: pl.LightningModule) -> bool:
    source = datamodule if datamodule is not None else model
    base = pl.LightningDataModule if datamodule is not None else pl.LightningModule
    return is_overridden("test_dataloader", source, base) and is_overridden("test_step", model, pl.LightningModule)


def best_checkpoint(trainer: pl.Trainer) -> str:
    callback = trainer.checkpoint_callback
    if callback is None:
        return ""
    path = callback.best_model_path or callback.last_model_path or ""
    return path if path and Path(path).is_file() else ""  # fast_dev_run names files it does not write


def fit_summary(
    trainer: pl.Trainer,
    model: pl.LightningModule,
    datamodule: pl.LightningDataModule | None,
    root: Path,
    log_dir: str | None,
    wall_s: float,
    test_metrics: dict[str, float] | None = None,
) -> list[str]:
    """The summary's lines (at most 5). ``log_dir`` is ``trainer.log_dir``, read by the caller on every rank (it is
    a collective under DDP)."""
    lines = [f"zoo: fit done: {trainer.current_epoch} epochs, {trainer.global_step} steps, {wall_s:.1f} s"]
    tracker = next((cb for cb in trainer.callbacks if isinstance(cb, BestMetric)), None)
    ckpt = best_checkpoint(trainer)
    untrained = bool(getattr(model, "trains_nothing", False))  # tested only (EdgeBank): 0 epochs, no checkpoint
    if ckpt:
        where = f": {shown(Path(ckpt))}"
    elif untrained:
        where = " (nothing to train: no checkpoint)"
    elif trainer.checkpoint_callback is None:
        where = " (no checkpoint: checkpointing is off)"
    else:
        where = " (no checkpoint written: no epoch finished)"
    if tracker is not None and tracker.best is not None:
        lines.append(f"  best {tracker.monitor} {tracker.best:.4g} (epoch {tracker.best_epoch}){where}")
    elif tracker is not None and tracker.last:
        lines.append(f"  last validation: {_fmt(tracker.last)}{where}")
    else:
        lines.append(f"  no validation split{where}")
    if test_metrics is not None:
        lines.append(f"  test: {_fmt(test_metrics) or 'no test metrics logged'}")
    elif has_test_split(datamodule, model):
        config = Path(log_dir or root) / "config.yaml"
        if (ckpt or untrained) and config.is_file():
            weights = shown(Path(ckpt)) if ckpt else "none"
            command = ["zoo", "test", "--config", shown(config), "--ckpt_path", weights]
            lines.append(f"  test metrics: {shlex.join(command)}")
        elif trainer.checkpoint_callback is None:
            lines.append("  test metrics: rerun with --trainer.enable_checkpointing true, then `zoo test --ckpt_path`")
    logs = f" (logs: {shown(Path(log_dir))})" if log_dir else ""
    lines.append(f"  run folder: {shown(root)}{logs}")
    return lines
