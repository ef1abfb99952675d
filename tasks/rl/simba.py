"""SimBa building blocks (Lee et al., "SimBa: Simplicity Bias for Scaling Up Parameters in Deep RL", ICLR 2025,
arXiv 2410.09754).

SimBa = running-statistics observation normalisation (``zoo.nn.running_mean_std``) + ``Dense(h)`` + N pre-LayerNorm
residual MLP blocks ``x + Dense(h)(ReLU(Dense(4h)(LayerNorm(x))))`` + a final LayerNorm. Initialisation follows the
reference (SonyResearch/simba, ``scale_rl/networks``): orthogonal(1) for the input projection, He-normal (truncated)
for the block layers, zero biases. ``StackedSimba`` holds E such networks as stacked ``(E, ...)`` parameters so that
``zoo.moe.dispatch_combine`` can run each expert on only the states routed to it.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from zoo.moe.experts import StackedExperts
from zoo.moe.segment_mm import segment_mm


def he_normal_(weight: Tensor, fan_in: int) -> Tensor:
    """Flax ``he_normal``: truncated normal on [-2, 2] std units, rescaled so the variance is 2 / fan_in."""
    std = math.sqrt(2.0 / fan_in) / 0.87962566103423978
    return nn.init.trunc_normal_(weight, std=std, a=-2 * std, b=2 * std)


class ResidualBlock(nn.Module):
    """SimBa's pre-LN residual feed-forward block: ``x + W2 ReLU(W1 LayerNorm(x))``, W1: h -> 4h, W2: 4h -> h.

    Shapes: (..., h) -> (..., h).
    """

    def __init__(self, hidden: int):
        super().__init__()
        self.norm = nn.LayerNorm(hidden)
        self.fc1 = nn.Linear(hidden, 4 * hidden)
        self.fc2 = nn.Linear(4 * hidden, hidden)
        for fc in (self.fc1, self.fc2):
            he_normal_(fc.weight, fc.in_features)
            nn.init.zeros_(fc.bias)

    def forward(self, x: Tensor) -> Tensor:
        return x + self.fc2(F.relu(self.fc1(self.norm(x))))


class SimbaEncoder(nn.Module):
    """SimBa encoder: ``LayerNorm(Block^N(Dense(h)(x)))`` (Lee et al. 2025, Fig. 1). Shapes: (B, in_dim) -> (B, h)."""

    def __init__(self, in_dim: int, hidden: int, num_blocks: int):
        super().__init__()
        self.out_dim = hidden
        self.embed = nn.Linear(in_dim, hidden)
        nn.init.orthogonal_(self.embed.weight)
        nn.init.zeros_(self.embed.bias)
        self.blocks = nn.Sequential(*[ResidualBlock(hidden) for _ in range(num_blocks)])
        self.norm = nn.LayerNorm(hidden)

    def forward(self, x: Tensor) -> Tensor:
        return self.norm(self.blocks(self.embed(x)))


class MLPEncoder(nn.Module):
    """The plain SAC encoder of the SimBa reference (``MLPBlock``): two ``Dense(h) + ReLU`` layers, orthogonal(sqrt 2).

    Shapes: (B, in_dim) -> (B, h).
    """

    def __init__(self, in_dim: int, hidden: int):
        super().__init__()
        self.out_dim = hidden
        self.net = nn.Sequential(nn.Linear(in_dim, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU())
        for layer in self.net:
            if isinstance(layer, nn.Linear):
                nn.init.orthogonal_(layer.weight, gain=math.sqrt(2))
                nn.init.zeros_(layer.bias)

    def forward(self, x: Tensor) -> Tensor:
        return self.net(x)


def _stacked(num_experts: int, fan_in: int, fan_out: int, init: str) -> nn.Parameter:
    w = torch.empty(num_experts, fan_in, fan_out)
    for e in range(num_experts):
        if init == "orthogonal":
            nn.init.orthogonal_(w[e])
        else:
            he_normal_(w[e], fan_in)
    return nn.Parameter(w)


class StackedSimba(StackedExperts):
    """E independent SimBa networks (``SimbaEncoder`` + optional linear head) with stacked parameters.

    Expert e maps (n, in_dim) -> (n, hidden) features, or (n, out_dim) when ``out_dim`` is given (a per-expert
    linear head, orthogonal init, for ScaleMoE's output-level gating). Parameters: ``embed_w`` (E, in, h),
    per block ``w1`` (E, h, 4h), ``w2`` (E, 4h, h), LayerNorm ``(E, h)`` scales/shifts, head (E, h, out).
    Implements ``forward_sorted(x (N, in), counts)`` for ``zoo.moe.dispatch_combine``: rows come sorted by
    expert, each weight matrix is applied per segment by ``zoo.moe.segment_mm``.
    """

    def __init__(self, num_experts: int, in_dim: int, hidden: int, num_blocks: int, out_dim: int | None = None):
        super().__init__(num_experts, in_dim, out_dim or hidden)
        E, h = num_experts, hidden
        self.hidden, self.num_blocks, self.has_head = hidden, num_blocks, out_dim is not None
        self.embed_w = _stacked(E, in_dim, h, "orthogonal")
        self.embed_b = nn.Parameter(torch.zeros(E, h))
        self.w1 = nn.ParameterList([_stacked(E, h, 4 * h, "he") for _ in range(num_blocks)])
        self.b1 = nn.ParameterList([nn.Parameter(torch.zeros(E, 4 * h)) for _ in range(num_blocks)])
        self.w2 = nn.ParameterList([_stacked(E, 4 * h, h, "he") for _ in range(num_blocks)])
        self.b2 = nn.ParameterList([nn.Parameter(torch.zeros(E, h)) for _ in range(num_blocks)])
        self.ln_w = nn.ParameterList([nn.Parameter(torch.ones(E, h)) for _ in range(num_blocks + 1)])
        self.ln_b = nn.ParameterList([nn.Parameter(torch.zeros(E, h)) for _ in range(num_blocks + 1)])
        if self.has_head:
            self.head_w = _stacked(E, h, out_dim, "orthogonal")
            self.head_b = nn.Parameter(torch.zeros(E, out_dim))

    def _norm(self, x: Tensor, i: int, rows: Tensor) -> Tensor:
        # per-expert LayerNorm affine: gather each row's expert scale/shift
        x = F.layer_norm(x, (self.hidden,))
        return x * self.ln_w[i].index_select(0, rows) + self.ln_b[i].index_select(0, rows)

    def forward_sorted(self, x: Tensor, counts: list[int]) -> Tensor:
        rows = torch.repeat_interleave(torch.arange(self.num_experts, device=x.device), torch.tensor(counts))
        x = segment_mm(x, self.embed_w, counts, self.embed_b)
        for i in range(self.num_blocks):
            h = F.relu(segment_mm(self._norm(x, i, rows), self.w1[i], counts, self.b1[i]))
            x = x + segment_mm(h, self.w2[i], counts, self.b2[i])
        x = self._norm(x, self.num_blocks, rows)
        return segment_mm(x, self.head_w, counts, self.head_b) if self.has_head else x

    def forward_dense(self, x: Tensor) -> Tensor:
        """Every expert on every row: (T, in) -> (T, E, out)."""
        T, E = x.shape[0], self.num_experts
        y = self.forward_sorted(x.repeat(E, 1), [T] * E)
        return y.reshape(E, T, -1).transpose(0, 1)


def simba_encoder_params(in_dim: int, hidden: int, num_blocks: int) -> int:
    """Parameter count of one ``SimbaEncoder`` (equal to one expert of ``StackedSimba`` without head)."""
    h = hidden
    block = 2 * h + (h * 4 * h + 4 * h) + (4 * h * h + h)
    return in_dim * h + h + num_blocks * block + 2 * h
