"""Value tokenisation of WestWorld / TrajWorld: symlog, a uniform bin support, HL-Gauss soft labels, decoding.

Every normalised scalar x becomes a distribution over K bins of ``symlog(x)`` on ``[-bound, bound]``:
``hl_gauss(y)`` puts on bin k the mass of a Gaussian N(y, sigma^2) between the bin's edges (Imani & White 2018;
"HL-Gauss", Farebrother et al. 2024), renormalised over the support, so each row sums to 1. The model reads these
soft vectors as inputs (``probs @ embedding``) and is trained with cross-entropy against them; a prediction
decodes as ``symexp(sum_k p_k * centre_k)``.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor


def symlog(x: Tensor) -> Tensor:
    return torch.sign(x) * torch.log1p(x.abs())


def symexp(y: Tensor) -> Tensor:
    return torch.sign(y) * torch.expm1(y.abs())


class BinSupport:
    """K uniform bins on [-bound, bound] of the symlog value; sigma = ``rel_sigma`` bin widths."""

    def __init__(self, bins: int = 256, bound: float = 2.5, rel_sigma: float = 0.75):
        self.bins, self.bound = bins, bound
        self.width = 2 * bound / bins
        self.sigma = rel_sigma * self.width

    def edges(self, device=None) -> Tensor:
        return torch.linspace(-self.bound, self.bound, self.bins + 1, device=device)

    def centres(self, device=None) -> Tensor:
        e = self.edges(device)
        return 0.5 * (e[1:] + e[:-1])

    def hl_gauss(self, x: Tensor) -> Tensor:
        """(...,) normalised values -> (..., K) soft labels of symlog(x) (clipped to the support), rows sum to 1."""
        y = symlog(x).clamp(-self.bound, self.bound)
        cdf = 0.5 * (1 + torch.erf((self.edges(x.device) - y[..., None]) / (self.sigma * math.sqrt(2))))
        mass = cdf[..., 1:] - cdf[..., :-1]
        return mass / mass.sum(-1, keepdim=True).clamp_min(1e-12)

    def decode(self, probs: Tensor) -> Tensor:
        """(..., K) probabilities -> (...,) values in the normalised space."""
        return symexp((probs * self.centres(probs.device)).sum(-1))
