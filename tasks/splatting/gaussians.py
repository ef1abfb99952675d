"""Canonical 3D Gaussians (Kerbl et al., 3D Gaussian Splatting, SIGGRAPH 2023): the learnable per-Gaussian state.

Parameters (N Gaussians, SH degree d, B = (d + 1)^2 bases): ``means`` (N, 3), ``log_scales`` (N, 3), ``quats``
(N, 4) wxyz, ``opacity_logits`` (N,), ``sh`` (N, B, 3). Initialised as D-NeRF Gaussian methods do for synthetic
scenes: uniform random points in a cube, isotropic scales from the mean spacing, opacity 0.1, grey colour.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
from torch import Tensor, nn


class GaussianState(NamedTuple):
    """Render-ready Gaussians at one time: means (N, 3), quats (N, 4), scales (N, 3), opacities (N,), sh (N, B, 3)."""

    means: Tensor
    quats: Tensor
    scales: Tensor
    opacities: Tensor
    sh: Tensor


class CanonicalGaussians(nn.Module):
    """N Gaussians in the canonical (time-independent) space; see the module docstring for shapes."""

    def __init__(self, num: int, sh_degree: int = 1, extent: float = 1.3) -> None:
        super().__init__()
        self.sh_degree = sh_degree
        spacing = 2 * extent / num ** (1 / 3)
        self.means = nn.Parameter((torch.rand(num, 3) * 2 - 1) * extent)
        self.log_scales = nn.Parameter(torch.full((num, 3), math.log(0.5 * spacing)))
        quats = torch.zeros(num, 4)
        quats[:, 0] = 1.0
        self.quats = nn.Parameter(quats)
        self.opacity_logits = nn.Parameter(torch.full((num,), math.log(0.1 / 0.9)))
        self.sh = nn.Parameter(torch.zeros(num, (sh_degree + 1) ** 2, 3))

    def __len__(self) -> int:
        return self.means.shape[0]

    def state(self) -> GaussianState:
        return GaussianState(
            self.means, self.quats, torch.exp(self.log_scales), torch.sigmoid(self.opacity_logits), self.sh
        )

    def param_groups(self, lr_means: float, lr: dict[str, float]) -> list[dict]:
        """Adam groups with 3DGS's per-attribute learning rates."""
        return [
            {"params": [self.means], "lr": lr_means},
            {"params": [self.log_scales], "lr": lr["scales"]},
            {"params": [self.quats], "lr": lr["quats"]},
            {"params": [self.opacity_logits], "lr": lr["opacity"]},
            {"params": [self.sh], "lr": lr["sh"]},
        ]
