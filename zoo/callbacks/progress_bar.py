"""Lightning's tqdm bar, with its total and ETA also after a run resumes in the middle of an epoch."""

from __future__ import annotations

import pytorch_lightning as pl
from pytorch_lightning.callbacks import TQDMProgressBar
from pytorch_lightning.callbacks.progress.tqdm_progress import convert_inf


class ResumableProgressBar(TQDMProgressBar):
    """``TQDMProgressBar`` whose training bar gets its total when training starts, not only at an epoch's start.

    A fit resumed mid-epoch (``zoo.data.resumable``, ``PeriodicCheckpoint``) skips ``on_train_epoch_start`` for the
    resumed epoch, so Lightning's bar shows ``16/?`` and no ETA until the next epoch. Here the bar starts at the
    batches already done, so its rate and ETA count only the batches this process runs.
    """

    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        super().on_train_start(trainer, pl_module)
        bar = self.train_progress_bar
        done = trainer.fit_loop.epoch_loop.batch_progress.current.completed
        bar.reset(total=convert_inf(self.total_train_batches))
        bar.initial = bar.n = done
        bar.set_description(f"Epoch {trainer.current_epoch}")
