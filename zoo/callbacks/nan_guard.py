"""Stop a run the moment its loss stops being finite, before the bad gradient reaches the weights."""

from __future__ import annotations

import pytorch_lightning as pl
import torch

from zoo.errors import NonFiniteLossError


class NaNGuard(pl.Callback):
    """Raise :class:`~zoo.errors.NonFiniteLossError` naming the step when the loss is NaN or infinite.

    The check runs in ``on_before_backward``, which Lightning calls for automatic optimisation and for every
    ``manual_backward``, so no optimiser step ever applies a non-finite gradient. Checkpoints already written
    (``last.ckpt``) are the last good state; the exception stops training before another is saved.
    """

    def on_before_backward(self, trainer: pl.Trainer, pl_module: pl.LightningModule, loss: torch.Tensor) -> None:
        if not torch.isfinite(loss.detach()).all():
            raise NonFiniteLossError(
                f"loss is {loss.detach().flatten()[0].item()} at global step {trainer.global_step} "
                f"(epoch {trainer.current_epoch}); stopped. The last good checkpoint is kept"
                + (f" in {trainer.checkpoint_callback.dirpath}" if trainer.checkpoint_callback else "")
                + ". Lower the learning rate or enable gradient clipping (--trainer.gradient_clip_val)."
            )
