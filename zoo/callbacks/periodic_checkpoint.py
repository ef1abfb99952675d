"""Save ``last.ckpt`` every few minutes inside a long epoch, so a killed run loses at most that much work."""

from __future__ import annotations

import time
from pathlib import Path

import pytorch_lightning as pl
from pytorch_lightning.callbacks import ModelCheckpoint

from zoo.callbacks.atomic_checkpoint import atomic_save


class PeriodicCheckpoint(pl.Callback):
    """Overwrite the ``ModelCheckpoint``'s ``last.ckpt`` after a training batch once ``every_s`` seconds have
    passed since the previous save.

    Lightning's own ``ModelCheckpoint(train_time_interval=...)`` cannot be combined with its end-of-epoch saves
    (the two triggers are mutually exclusive), and the run still needs those; this callback adds the timed save
    beside them. The file is written to a temporary name and renamed, so a run killed while saving keeps the
    previous ``last.ckpt`` intact.

    A mid-epoch checkpoint resumes faithfully only if the training position is in the checkpoint: either the
    module keeps its own progress (the RL agent's step counter and replay buffer) or the training loader is
    stateful (:func:`zoo.data.resumable.resumable_train_loader`, whose shuffle state and batch count Lightning
    saves and restores). With a plain ``DataLoader`` Lightning restarts the epoch's iterator from a
    fresh shuffle, so some batches would be seen twice. Does nothing when the trainer has no
    ``ModelCheckpoint`` (``enable_checkpointing=False``).
    """

    def __init__(self, every_s: float):
        if every_s <= 0:
            raise ValueError(f"every_s must be > 0, got {every_s}")
        self.every_s = every_s
        self._last_save = time.monotonic()

    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self._last_save = time.monotonic()

    def on_train_batch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule, outputs, batch, idx) -> None:
        due = time.monotonic() - self._last_save >= self.every_s
        # every process must save at the same step (the save ends in a barrier): rank 0's clock decides
        if not trainer.strategy.broadcast(due, src=0):
            return
        callback = trainer.checkpoint_callback
        if not isinstance(callback, ModelCheckpoint) or callback.dirpath is None:
            return
        path = Path(callback.dirpath) / f"{callback.CHECKPOINT_NAME_LAST}{callback.FILE_EXTENSION}"
        # Claim the file for the ModelCheckpoint, in its state saved here too: otherwise its own end-of-epoch save
        # (also after a resume) finds a last.ckpt it did not write and saves to last-v1.ckpt beside it.
        callback.last_model_path = str(path)
        atomic_save(trainer, path, weights_only=False)  # the full state (optimisers too), said explicitly
        self._last_save = time.monotonic()
