"""Reversible instance normalisation (RevIN) for forecasters."""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import Tensor, nn


class RevINStats(NamedTuple):
    """The per-(sample, channel) lookback statistics of one batch, both ``(B, 1, C)`` and detached."""

    mean: Tensor
    std: Tensor


class RevIN(nn.Module):
    """RevIN (Kim et al., "Reversible Instance Normalization for Accurate Time-Series Forecasting against
    Distribution Shift", ICLR 2022, openreview.net/forum?id=cGDAkQo1C0p (no arXiv version); Sec. 3, Eqs. 1-3).

    Each series is normalised by its own lookback mean and (biased) standard deviation before the network,
    ``x_norm = gamma * (x - mean) / sqrt(var + eps) + beta``, and the forecast is mapped back with the same
    statistics, ``y = (y_norm - beta) / (gamma + eps^2) * std + mean``. The statistics are a value
    (:class:`RevINStats`) handed from :meth:`normalize` to :meth:`denormalize`, never stored on the module.

    Shapes: ``normalize(x (B, L, C)) -> (x_norm (B, L, C), stats)``; ``denormalize(y (B, H, C), stats) -> (B, H, C)``.
    Parameters (``affine=True``): ``weight`` (C,) = gamma, ``bias`` (C,) = beta.
    """

    def __init__(self, num_channels: int, eps: float = 1e-5, affine: bool = True):
        super().__init__()
        self.eps = eps
        self.affine = affine
        if affine:
            self.weight = nn.Parameter(torch.ones(num_channels))
            self.bias = nn.Parameter(torch.zeros(num_channels))

    def normalize(self, x: Tensor) -> tuple[Tensor, RevINStats]:
        mean = x.mean(dim=1, keepdim=True).detach()
        std = torch.sqrt(x.var(dim=1, keepdim=True, unbiased=False) + self.eps).detach()
        x = (x - mean) / std
        if self.affine:
            x = x * self.weight + self.bias
        return x, RevINStats(mean, std)

    def denormalize(self, y: Tensor, stats: RevINStats) -> Tensor:
        if self.affine:
            y = (y - self.bias) / (self.weight + self.eps * self.eps)
        return y * stats.std + stats.mean
