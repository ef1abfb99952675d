"""Stop a run the moment its loss stops being finite, before the bad gradient reaches the weights."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytorch_lightning as pl
import torch

from zoo.errors import NonFiniteLossError


def nonfinite_inputs(batch: Any, name: str = "batch") -> list[str]:
    """Where ``batch`` (a tensor, or a dict / list / tuple nesting them) holds NaN or inf floating-point values:
    one ``"batch['x']: 3 of 4096 values"`` entry per such tensor."""
    if isinstance(batch, torch.Tensor):
        if not batch.is_floating_point() and not batch.is_complex():
            return []
        bad = int((~torch.isfinite(batch)).sum())
        return [f"{name}: {bad} of {batch.numel()} values"] if bad else []
    if isinstance(batch, Mapping):
        return [hit for key, value in batch.items() for hit in nonfinite_inputs(value, f"{name}[{key!r}]")]
    if isinstance(batch, Sequence) and not isinstance(batch, str):
        return [hit for i, value in enumerate(batch) for hit in nonfinite_inputs(value, f"{name}[{i}]")]
    return []


class NaNGuard(pl.Callback):
    """Raise :class:`~zoo.errors.NonFiniteLossError` naming the step when the loss is NaN or infinite.

    The check runs in ``on_before_backward``, which Lightning calls for automatic optimisation and for every
    ``manual_backward``, so no optimiser step ever applies a non-finite gradient. Checkpoints already written
    (``last.ckpt``) are the last good state; the exception stops training before another is saved. When the batch
    itself holds NaN/inf features the message says so (the data is at fault, not the learning rate); the batch is
    only inspected once the loss is bad, so healthy steps cost nothing.
    """

    def __init__(self) -> None:
        self._batch: Any = None
        self._batch_idx = -1

    def on_train_batch_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule, batch: Any, idx: int) -> None:
        self._batch, self._batch_idx = batch, idx

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        self._batch = None  # do not keep the batch alive between steps

    def on_before_backward(self, trainer: pl.Trainer, pl_module: pl.LightningModule, loss: torch.Tensor) -> None:
        finite = bool(torch.isfinite(loss.detach()).all())
        # under DDP a NaN in one process's shard must stop every process, or the others hang in the all-reduce
        if not trainer.strategy.reduce_boolean_decision(not finite, all=False):
            return
        where = f"at global step {trainer.global_step} (epoch {trainer.current_epoch}, batch {self._batch_idx})"
        kept = " The last good checkpoint is kept" + (
            f" in {trainer.checkpoint_callback.dirpath}." if trainer.checkpoint_callback else "."
        )
        if finite:
            raise NonFiniteLossError(f"another process's loss is not finite {where}; stopped.{kept}")
        bad_inputs = nonfinite_inputs(self._batch)
        if bad_inputs:
            raise NonFiniteLossError(
                f"the training batch {where} has non-finite input features ({'; '.join(bad_inputs[:3])}): the data "
                f"holds NaN or inf values; clean or impute them.{kept}"
            )
        raise NonFiniteLossError(
            f"loss is {loss.detach().flatten()[0].item()} {where}; stopped.{kept} "
            "Lower the learning rate or enable gradient clipping (--trainer.gradient_clip_val)."
        )
