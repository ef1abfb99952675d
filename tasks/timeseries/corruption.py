"""Seeded corruptions of test inputs, for the robustness evaluation that SEER's claim rests on.

Only the lookback window (the model input) is corrupted, never the target, and only at test time. All
amounts are on the normalised scale (train-fitted StandardScaler: one unit is one train standard deviation
of the channel):

- ``missing``: each input point is lost with probability ``rate`` and zero-filled (the train mean), as a
  logger that drops readings would report them after imputation by the mean.
- ``spike``: each input point is hit with probability ``rate`` by an outlier of ``+-size`` units
  (random sign).
- ``noise``: white Gaussian noise of standard deviation ``rate`` units is added to every input point.

:class:`CorruptionStream` draws from one ``torch.Generator`` per kind, seeded once, and the draws depend
only on the batch shapes, so every model sees exactly the same corrupted test set.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from zoo.errors import ConfigError

KINDS = ("missing", "spike", "noise")


@dataclass(frozen=True)
class Corruption:
    """One corruption: ``kind`` in ``KINDS``, its ``rate`` (probability per point, or noise std) and the
    spike ``size`` in standard deviations."""

    kind: str
    rate: float
    size: float = 5.0

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ConfigError(f"unknown corruption {self.kind!r}; choose one of {', '.join(KINDS)}")
        if self.rate < 0 or (self.kind != "noise" and self.rate > 1):
            raise ConfigError(f"corruption {self.kind!r}: rate {self.rate} out of range")

    def describe(self) -> str:
        if self.kind == "missing":
            return f"{self.rate:.0%} of input points zero-filled"
        if self.kind == "spike":
            return f"{self.rate:.0%} of input points +-{self.size:g} std spikes"
        return f"Gaussian noise, std {self.rate:g}, on every input point"


def corrupt(x: Tensor, corruption: Corruption, generator: torch.Generator) -> Tensor:
    """A corrupted copy of x (any shape); random draws are made on the CPU with ``generator``."""
    if corruption.kind == "noise":
        noise = torch.randn(x.shape, generator=generator) * corruption.rate
        return x + noise.to(device=x.device, dtype=x.dtype)
    hit = (torch.rand(x.shape, generator=generator) < corruption.rate).to(x.device)
    if corruption.kind == "missing":
        return torch.where(hit, torch.zeros_like(x), x)
    sign = torch.randint(0, 2, x.shape, generator=generator).to(device=x.device, dtype=x.dtype) * 2 - 1
    return torch.where(hit, x + sign * corruption.size, x)


class CorruptionStream:
    """Applies each corruption to successive test batches with its own seeded generator."""

    def __init__(self, corruptions: list[Corruption], seed: int = 0):
        self.corruptions = corruptions
        self.generators = {
            c.kind: torch.Generator().manual_seed(seed * 1000 + KINDS.index(c.kind)) for c in corruptions
        }

    def __call__(self, x: Tensor) -> dict[str, Tensor]:
        """{kind: corrupted x} for one batch."""
        return {c.kind: corrupt(x, c, self.generators[c.kind]) for c in self.corruptions}
