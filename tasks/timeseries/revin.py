"""Reversible instance normalisation (RevIN)."""

from __future__ import annotations

import torch
from torch import Tensor, nn


class RevIN(nn.Module):
    """RevIN (Kim et al., "Reversible Instance Normalization for Accurate Time-Series Forecasting against
    Distribution Shift", ICLR 2022): each series is normalised by its own lookback mean and std before the
    network, and the forecast is mapped back with the same statistics, with an optional learnable affine map.

    ``normalize`` takes x ``(B, L, C)`` and stores the per-(sample, channel) statistics; ``denormalize``
    takes y ``(B, H, C)`` and must be called after ``normalize`` on the same batch.
    """

    def __init__(self, num_channels: int, eps: float = 1e-5, affine: bool = True):
        super().__init__()
        self.eps = eps
        self.affine = affine
        if affine:
            self.weight = nn.Parameter(torch.ones(num_channels))
            self.bias = nn.Parameter(torch.zeros(num_channels))
        self._mean: Tensor | None = None
        self._std: Tensor | None = None

    def normalize(self, x: Tensor) -> Tensor:
        self._mean = x.mean(dim=1, keepdim=True).detach()
        self._std = torch.sqrt(x.var(dim=1, keepdim=True, unbiased=False) + self.eps).detach()
        x = (x - self._mean) / self._std
        if self.affine:
            x = x * self.weight + self.bias
        return x

    def denormalize(self, y: Tensor) -> Tensor:
        if self._mean is None or self._std is None:
            raise RuntimeError("RevIN.denormalize called before normalize")
        if self.affine:
            y = (y - self.bias) / (self.weight + self.eps * self.eps)
        return y * self._std + self._mean
