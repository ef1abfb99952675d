"""After a mid-epoch resume the progress bar shows its total (and so an ETA) again (issue 17 item 6)."""

import pytest
import pytorch_lightning as pl
import torch
from torch import nn
from torch.utils.data import TensorDataset

from zoo.callbacks.progress_bar import ResumableProgressBar
from zoo.data.resumable import resumable_train_loader


class _Regression(pl.LightningModule):
    """40 batches of 10 random (x (10, 4), y (10, 1)) pairs, one linear layer."""

    def __init__(self):
        super().__init__()
        self.layer = nn.Linear(4, 1)

    def training_step(self, batch, batch_idx):
        x, y = batch
        return ((self.layer(x) - y) ** 2).mean()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)

    def train_dataloader(self):
        data = TensorDataset(torch.randn(400, 4, generator=torch.Generator().manual_seed(0)), torch.randn(400, 1))
        return resumable_train_loader(data, batch_size=10, seed=0)


class _Killed(Exception):
    pass


class _StopAt(pl.Callback):
    def __init__(self, path):
        self.path = path

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        if batch_idx == 14:
            trainer.save_checkpoint(self.path)
            raise _Killed


class _Watch(ResumableProgressBar):
    seen = None

    def on_train_batch_end(self, trainer, *args):
        super().on_train_batch_end(trainer, *args)
        if self.seen is None:
            self.seen = (self.train_progress_bar.total, self.train_progress_bar.n, self.train_progress_bar.initial)


def _trainer(tmp_path, callbacks, bar):
    return pl.Trainer(
        max_epochs=1,
        callbacks=callbacks,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=bar,
        enable_model_summary=False,
        default_root_dir=tmp_path,
    )


def test_bar_has_its_total_after_a_mid_epoch_resume(tmp_path):
    ckpt = tmp_path / "mid.ckpt"
    with pytest.raises(_Killed):  # a run killed after batch 14, its checkpoint saved mid-epoch
        _trainer(tmp_path, [_StopAt(ckpt)], bar=False).fit(_Regression())
    watch = _Watch()
    _trainer(tmp_path, [watch], bar=True).fit(_Regression(), ckpt_path=ckpt, weights_only=False)
    total, n, initial = watch.seen
    assert total == 40 and n == 16 and 0 < initial < n  # the ETA counts from where this process started
