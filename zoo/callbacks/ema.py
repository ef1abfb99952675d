"""An exponential moving average of the weights, with the decay warm-ups the diffusion references use."""

from __future__ import annotations

from typing import Literal

import torch
from pytorch_lightning.callbacks import WeightAveraging
from torch.optim.swa_utils import get_ema_multi_avg_fn

Schedule = Literal["constant", "litema", "ema_pytorch"]
SCHEDULES: tuple[str, ...] = ("constant", "litema", "ema_pytorch")
EMA_PYTORCH_AFTER = 100  # ema-pytorch's update_after_step: the EMA copies the weights up to this step
EMA_PYTORCH_POWER = 2 / 3  # ema-pytorch's power (inv_gamma 1)


def ema_decay(schedule: Schedule, decay: float, update: int, step: int) -> float:
    """The decay of one EMA update: ``averaged <- decay * averaged + (1 - decay) * current``.

    ``update`` numbers the updates from 1 (Lightning's ``AveragedModel`` copies the weights at update 1, so this is
    asked from update 2 on); ``step`` is the optimiser step (1-based) the update follows.
    - ``constant``: ``decay``.
    - ``litema``: latent diffusion's ``LitEma`` (Rombach et al., CVPR 2022), which TimeDP trains with:
      ``min(decay, (1 + u) / (10 + u))`` at its u-th call (its first call mixes in the initial weights, where update
      1 here copies the weights after step 1).
    - ``ema_pytorch``: ema-pytorch 0.2.1 as Diffusion-TS (Yuan & Qiao, ICLR 2024) uses it: the weights are copied
      while ``step - 1 <= 100``, then ``min(decay, 1 - (1 + step - 101) ** (-2/3))``.
    """
    if schedule == "constant":
        return decay
    if schedule == "litema":
        return min(decay, (1 + update) / (10 + update))
    if schedule == "ema_pytorch":
        epoch = step - EMA_PYTORCH_AFTER - 1
        return 0.0 if epoch <= 0 else min(decay, 1 - (1 + epoch) ** -EMA_PYTORCH_POWER)
    raise ValueError(f"unknown EMA schedule {schedule!r}; choose from {', '.join(SCHEDULES)}")


class EMAWeights(WeightAveraging):
    """Keep an EMA of the parameters; validate, checkpoint, test and sample with it.

    Lightning's ``WeightAveraging`` does the bookkeeping (the average is swapped in for validation, stored as the
    checkpoint's ``state_dict`` with the raw weights beside it, restored on resume, copied into the model when
    training ends); Lightning's own ``EMAWeightAveraging`` has a constant decay only, and the time-series diffusion
    references warm theirs up, so this class adds the schedules of :func:`ema_decay`. Written here because no
    library combines those schedules with Lightning's checkpoint handling (ema-pytorch keeps its own copy outside
    the checkpoint).

    Buffers are not averaged (they are kept equal to the model's): the diffusion schedule and positional tables
    are constants, and routing counters must not be smoothed.

    Args:
        decay: the (maximum) decay, e.g. 0.9999 (LitEma) or 0.995 (Diffusion-TS).
        every_n_steps: update after every n-th optimiser step (Diffusion-TS: 10).
        schedule: the warm-up, one of ``constant``, ``litema``, ``ema_pytorch``.
    """

    def __init__(self, decay: float = 0.9999, every_n_steps: int = 1, schedule: Schedule = "constant") -> None:
        if not 0.0 <= decay < 1.0:
            raise ValueError(f"EMA decay must be in [0, 1), got {decay}")
        if every_n_steps < 1:
            raise ValueError(f"EMA every_n_steps must be >= 1, got {every_n_steps}")
        ema_decay(schedule, decay, 2, 2)  # rejects an unknown schedule now, not at the first update
        self.decay, self.every_n_steps, self.schedule = decay, every_n_steps, schedule
        super().__init__(use_buffers=False, multi_avg_fn=self._average)

    def should_update(self, step_idx: int | None = None, epoch_idx: int | None = None) -> bool:
        return step_idx is not None and step_idx % self.every_n_steps == 0

    @torch.no_grad()
    def _average(self, averaged: list[torch.Tensor], current: list[torch.Tensor], n_averaged: torch.Tensor) -> None:
        n = int(n_averaged)  # updates done so far; this is update n + 1
        step = n * self.every_n_steps + 1  # updates follow steps 1, 1 + every, 1 + 2 * every, ...
        get_ema_multi_avg_fn(ema_decay(self.schedule, self.decay, n + 1, step))(averaged, current, n_averaged)
