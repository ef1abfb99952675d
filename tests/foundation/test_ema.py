"""The EMA callback averages the weights with its reference's decay warm-up, and a resumed run ends where an
uninterrupted one does."""

import math

import pytest
import pytorch_lightning as pl
import torch
from pytorch_lightning.callbacks import ModelCheckpoint
from pytorch_lightning.demos.boring_classes import BoringModel

from zoo.callbacks.ema import EMAWeights, ema_decay

STEPS_PER_EPOCH = 10


class Drifting(BoringModel):
    """BoringModel at a constant learning rate, so its weights still move when the average is taken."""

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.01)


class RecordWeights(pl.Callback):
    """The weights after every optimiser step, as the EMA sees them."""

    def __init__(self):
        self.steps: list[torch.Tensor] = []

    def on_train_batch_end(self, trainer, pl_module, *args):
        self.steps.append(pl_module.layer.weight.detach().clone())


def _fit(root, ema, epochs, ckpt_path=None, record=None):
    torch.manual_seed(0)
    model = Drifting()
    trainer = pl.Trainer(
        default_root_dir=root,
        max_epochs=epochs,
        limit_train_batches=STEPS_PER_EPOCH,
        limit_val_batches=1,
        logger=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        callbacks=[*([record] if record else []), ema, ModelCheckpoint(dirpath=root, save_last=True)],
    )
    trainer.fit(model, ckpt_path=ckpt_path, weights_only=True)
    return model


def test_schedules_follow_their_references():
    assert ema_decay("constant", 0.99, 2, 2) == 0.99
    assert ema_decay("litema", 0.9999, 2, 2) == pytest.approx(3 / 12)  # LitEma's second call
    assert ema_decay("litema", 0.9999, 10**7, 10**7) == 0.9999
    assert ema_decay("ema_pytorch", 0.995, 2, 101) == 0.0  # still copying
    assert ema_decay("ema_pytorch", 0.995, 3, 111) == pytest.approx(1 - 11 ** (-2 / 3))
    assert ema_decay("ema_pytorch", 0.995, 600, 6000) == 0.995


@pytest.mark.parametrize(
    ("schedule", "decay", "every", "epochs"), [("litema", 0.8, 3, 4), ("ema_pytorch", 0.9, 10, 14)]
)
def test_the_trained_model_ends_with_the_hand_computed_average(tmp_path, schedule, decay, every, epochs):
    record = RecordWeights()
    model = _fit(tmp_path, EMAWeights(decay, every, schedule), epochs, record=record)
    assert len(record.steps) == epochs * STEPS_PER_EPOCH
    expected, update = None, 0
    for step, weights in enumerate(record.steps, start=1):
        if (step - 1) % every:
            continue
        update += 1
        d = 0.0 if expected is None else ema_decay(schedule, decay, update, step)
        expected = weights if expected is None else d * expected + (1 - d) * weights
    assert not torch.allclose(expected, record.steps[-1])  # the average differs from the last weights
    torch.testing.assert_close(model.layer.weight.detach(), expected)


def test_a_resumed_run_ends_with_the_uninterrupted_average(tmp_path):
    whole = _fit(tmp_path / "whole", EMAWeights(0.9, 3, "litema"), 4)
    _fit(tmp_path / "cut", EMAWeights(0.9, 3, "litema"), 2)
    saved = torch.load(tmp_path / "cut" / "last.ckpt", weights_only=True)
    assert "current_model_state" in saved  # the checkpoint holds the average and the raw weights
    resumed = _fit(tmp_path / "cut", EMAWeights(0.9, 3, "litema"), 4, ckpt_path=str(tmp_path / "cut" / "last.ckpt"))
    torch.testing.assert_close(resumed.layer.weight.detach(), whole.layer.weight.detach())


def test_bad_settings_are_refused():
    with pytest.raises(ValueError, match="schedule 'cosine'"):
        EMAWeights(0.99, 1, "cosine")
    with pytest.raises(ValueError, match="decay"):
        EMAWeights(1.0)
    with pytest.raises(ValueError, match="every_n_steps"):
        EMAWeights(0.99, 0)
    assert math.isclose(EMAWeights(0.99).decay, 0.99)
