"""Mamba along time for CPU and GPU: mambapy's pure-PyTorch block (parallel scan), the CUDA kernel when present.

`naive_selective_scan` is the reference recurrence the tests compare mambapy's parallel scan against:
``h_t = exp(delta_t A) h_{t-1} + delta_t B_t x_t``, ``y_t = C_t h_t + D x_t`` (Gu & Dao 2023, Algorithm 2).
"""

from __future__ import annotations

import importlib.util

import torch
from torch import Tensor, nn


def naive_selective_scan(x: Tensor, delta: Tensor, A: Tensor, B: Tensor, C: Tensor, D: Tensor) -> Tensor:
    """x, delta (b, L, ED); A (ED, N); B, C (b, L, N); D (ED,) -> y (b, L, ED), one step at a time."""
    h = x.new_zeros(x.shape[0], x.shape[2], A.shape[1])
    ys = []
    for t in range(x.shape[1]):
        h = torch.exp(delta[:, t, :, None] * A) * h + delta[:, t, :, None] * B[:, t, None, :] * x[:, t, :, None]
        ys.append((h * C[:, t, None, :]).sum(-1) + D * x[:, t])
    return torch.stack(ys, dim=1)


class MambaMixer(nn.Module):
    """One Mamba block (Gu & Dao 2023) over (b, L, dim) -> (b, L, dim), no residual: mambapy's ``MambaBlock``.

    ``d_state`` N (the paper: 64), expansion 2, conv width 4. Uses the official CUDA selective scan when
    ``mamba_ssm`` is installed and the input is on a GPU-capable build; else mambapy's parallel scan.
    """

    def __init__(self, dim: int, d_state: int = 16, d_conv: int = 4, expand: int = 2):
        super().__init__()
        from mambapy.mamba import MambaBlock, MambaConfig

        cuda = torch.cuda.is_available() and importlib.util.find_spec("mamba_ssm") is not None
        self.config = MambaConfig(
            d_model=dim, n_layers=1, d_state=d_state, d_conv=d_conv, expand_factor=expand, use_cuda=cuda
        )
        self.block = MambaBlock(self.config)

    def forward(self, x: Tensor) -> Tensor:
        return self.block(x)
