"""TimeDP's domain prompts: prototype assignments computed from example windows (Huang et al., "TimeDP:
Learning to Generate Multi-Domain Time Series with Domain Prompts", AAAI 2025, arXiv 2501.05403, Sec. 4;
microsoft/TimeCraft ``ldm/modules/encoders/modules.py`` ``DomainUnifiedPrototyper`` and the PAM cross-attention
of ``ldm/modules/attention.py``).

A fixed, orthogonally initialised pool of ``num_latents`` prototypes (``latents``, not trained) is shared by all
domains; a small conv encoder maps one window to ``num_latents`` assignment logits ``m``, the window's domain
prompt. The denoiser cross-attends to the prototypes with ``m`` added to the attention logits and every
prototype with ``m <= 0`` masked out (prototype assignment module, PAM).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from zoo.errors import ConfigError


class _ResBlockTime(nn.Module):
    """``x + Conv1x1(ReLU(BN(Conv3(ReLU(x)))))`` (TimeDP's ``ResBlockTime`` with ``bn=True``)."""

    def __init__(self, dim: int):
        super().__init__()
        self.convs = nn.Sequential(
            nn.ReLU(),
            nn.Conv1d(dim, dim, kernel_size=3, padding=1),
            nn.BatchNorm1d(dim),
            nn.ReLU(),
            nn.Conv1d(dim, dim, kernel_size=1),
        )

    def forward(self, x: Tensor) -> Tensor:
        return x + self.convs(x)


class DomainPrompter(nn.Module):
    """Windows -> prototype assignment logits (the domain prompt) and the prototype pool.

    Shapes: ``forward(x (B, L, C)) -> m (B, num_latents)``; ``latents`` (num_latents, latent_dim).
    ``L`` must be divisible by 4 (two stride-2 convolutions).
    """

    def __init__(self, window: int, num_channels: int = 1, dim: int = 32, num_latents: int = 16, latent_dim: int = 32):
        super().__init__()
        if window % 4:
            raise ConfigError(f"the prompt encoder needs a window length divisible by 4, got seq_len={window}")
        self.encoder = nn.Sequential(
            nn.Conv1d(num_channels, dim, kernel_size=4, stride=2, padding=1),
            nn.BatchNorm1d(dim),
            nn.ReLU(),
            nn.Conv1d(dim, dim, kernel_size=4, stride=2, padding=1),
            nn.BatchNorm1d(dim),
            nn.ReLU(),
            _ResBlockTime(dim),
            nn.Flatten(),
            nn.Linear(dim * window // 4, num_latents),
        )
        latents = torch.empty(num_latents, latent_dim)
        nn.init.orthogonal_(latents)
        self.latents = nn.Parameter(latents, requires_grad=False)
        self.num_latents, self.latent_dim = num_latents, latent_dim

    def forward(self, x: Tensor) -> Tensor:
        return self.encoder(x.transpose(1, 2))


def pam_bias(m: Tensor, masked: float = -1e4) -> Tensor:
    """Additive attention bias of PAM: ``m`` where ``m > 0``, ``m + masked`` elsewhere (TimeDP adds
    ``-finfo.max``; a finite -1e4 masks as well and keeps an all-masked row finite: it attends uniformly)."""
    return m + (m <= 0).to(m.dtype) * masked
