"""Running mean and variance of a stream of vectors, for normalising inputs (RL observations, features).

The parallel update of Chan, Golub & LeVeque ("Updating formulae and a pairwise algorithm for computing sample
variances", 1979), as in gymnasium's and SimBa's (Lee et al., arXiv 2410.09754) ``RunningMeanStd``.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn


class RunningMeanStd(nn.Module):
    """Running mean / (population) variance of the rows seen so far; normalises inputs with them.

    ``update(x (..., d))`` folds every row of a batch in; ``forward(x (..., d))`` returns
    ``(x - mean) / sqrt(var + eps)`` in ``x``'s dtype. Statistics are float64 buffers ``mean`` (d,), ``var`` (d,)
    and ``count`` () so they are checkpointed; they start at mean 0, var 1, count 1e-4 like the reference.
    """

    def __init__(self, dim: int, eps: float = 1e-8):
        super().__init__()
        self.eps = eps
        self.register_buffer("mean", torch.zeros(dim, dtype=torch.float64))
        self.register_buffer("var", torch.ones(dim, dtype=torch.float64))
        self.register_buffer("count", torch.tensor(1e-4, dtype=torch.float64))

    @torch.no_grad()
    def update(self, x: Tensor) -> None:
        x = x.reshape(-1, self.mean.shape[0]).double()
        batch_mean, batch_var, n = x.mean(0), x.var(0, unbiased=False), x.shape[0]
        delta = batch_mean - self.mean
        total = self.count + n
        m2 = self.var * self.count + batch_var * n + delta.square() * self.count * n / total
        self.mean += delta * n / total
        self.var.copy_(m2 / total)
        self.count.copy_(total)

    def forward(self, x: Tensor) -> Tensor:
        return ((x - self.mean) / torch.sqrt(self.var + self.eps)).to(x.dtype)
