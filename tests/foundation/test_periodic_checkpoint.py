"""The timed mid-epoch save shares ``last.ckpt`` with the ModelCheckpoint: one file, always the newest state."""

import pytest
import pytorch_lightning as pl
import torch
from pytorch_lightning.callbacks import ModelCheckpoint
from pytorch_lightning.demos.boring_classes import BoringModel

from zoo.callbacks.periodic_checkpoint import PeriodicCheckpoint


def _fit(root, max_epochs, ckpt_path=None):
    trainer = pl.Trainer(
        default_root_dir=root,
        max_epochs=max_epochs,
        limit_train_batches=5,
        limit_val_batches=1,
        logger=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        callbacks=[ModelCheckpoint(dirpath=root, save_last=True), PeriodicCheckpoint(every_s=1e-9)],
    )
    trainer.fit(BoringModel(), ckpt_path=ckpt_path, weights_only=True)
    return trainer


def test_end_of_epoch_saves_overwrite_the_periodic_last_ckpt(tmp_path):
    _fit(tmp_path, max_epochs=2)
    assert sorted(p.name for p in tmp_path.glob("last*")) == ["last.ckpt"]  # no last-v1.ckpt beside it
    assert torch.load(tmp_path / "last.ckpt", weights_only=True)["global_step"] == 10

    resumed = _fit(tmp_path, max_epochs=3, ckpt_path="last")
    assert resumed.global_step == 15
    assert sorted(p.name for p in tmp_path.glob("last*")) == ["last.ckpt"]


def test_the_interval_must_be_positive():
    with pytest.raises(ValueError, match="every_s"):
        PeriodicCheckpoint(every_s=0)
