"""MAMMOTH: a multi-head mixture of low-rank mini-experts with Soft-MoE slots, in place of a MIL linear layer.

Paper: "Mixture of Mini Experts: Overcoming the Linear Layer Bottleneck in Multiple Instance Learning"
(MAMMOTH, ICLR 2026; reference code mahmoodlab/MAMMOTH, PyPI ``mammoth-moe``). Slot routing follows Soft MoE
(Puigcerver et al., "From Sparse to Soft Mixtures of Experts", ICLR 2024).

Shapes: B bags, N instances (padded), d_in input features, E experts, S slots per expert, H heads,
q = slot_dim / H per-head query width, o = out_dim / H per-head output width, r the expert rank.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from zoo.errors import ConfigError
from zoo.moe.experts import LinearExperts, LowRankExperts


def linear_num_params(in_dim: int, out_dim: int) -> int:
    """Parameters of the ``nn.Linear(in_dim, out_dim)`` that MAMMOTH replaces (its parameter budget)."""
    return in_dim * out_dim + out_dim


def _fixed_and_per_rank(
    in_dim: int, out_dim: int, num_experts: int, num_slots: int, num_heads: int, slot_dim: int, shared_down: bool
) -> tuple[int, int]:
    """MAMMOTH's parameter count as ``fixed + rank * per_rank`` (exact; checked against the module in tests)."""
    e, h, q = num_experts, num_heads, slot_dim // num_heads
    fixed = in_dim * slot_dim + slot_dim  # query projection
    fixed += slot_dim + q  # LayerNorm scales (query, slot embeddings)
    fixed += e * num_slots * slot_dim  # slot embeddings (E, H, S, q)
    fixed += e * out_dim  # expert output biases (E*H, o)
    fixed += e * out_dim  # expert-wise RMSNorm scales (E, H*o)
    if shared_down:  # per-head down projection (H, q, r) + bias, per-(expert, head) up projection (E*H, r, o)
        per_rank = h * q + h + e * out_dim
    else:  # a full low-rank expert (E*H, q, r) @ (E*H, r, o) per (expert, head)
        per_rank = e * h * q + e * out_dim
    return fixed, per_rank


def mammoth_num_params(
    in_dim: int,
    out_dim: int,
    num_experts: int,
    num_slots: int,
    num_heads: int,
    slot_dim: int,
    rank: int,
    shared_down: bool = True,
) -> int:
    """Exact number of parameters of :class:`Mammoth` with these settings."""
    fixed, per_rank = _fixed_and_per_rank(in_dim, out_dim, num_experts, num_slots, num_heads, slot_dim, shared_down)
    return fixed + rank * per_rank


def budget_rank(
    in_dim: int,
    out_dim: int,
    num_experts: int,
    num_slots: int,
    num_heads: int,
    slot_dim: int,
    shared_down: bool = True,
) -> int:
    """The rank whose MAMMOTH parameter count is closest to that of ``nn.Linear(in_dim, out_dim)``.

    Unlike the package's closed form (which ignores biases, norms and slot embeddings), every parameter is
    counted. Raises ConfigError when even rank 1 overshoots the budget by more than half.
    """
    budget = linear_num_params(in_dim, out_dim)
    fixed, per_rank = _fixed_and_per_rank(in_dim, out_dim, num_experts, num_slots, num_heads, slot_dim, shared_down)
    rank = max(1, round((budget - fixed) / per_rank))
    if fixed + rank * per_rank > 1.5 * budget:
        raise ConfigError(
            f"MAMMOTH with {num_experts} experts x {num_slots} slots, {num_heads} heads and slot_dim={slot_dim} needs "
            f"{fixed + per_rank} parameters at rank 1, more than 1.5x the {budget} of Linear({in_dim}, {out_dim}); "
            "use fewer experts/slots or a smaller slot_dim, or pass rank explicitly"
        )
    return rank


class Mammoth(nn.Module):
    """MAMMOTH layer: instance features -> task-specific instance features through E x H low-rank mini-experts.

    For each head h, instance queries ``x_h = LN(W_q x)[..., h]`` are scored against learned slot embeddings
    ``phi[e, h, s]``: ``logits[b, n, e, h, s] = <x_h[b, n], LN(phi[e, h, s])>``. Then (Soft MoE)

    - dispatch ``D = softmax over instances n`` (padding excluded): slot input ``s_in[e,h,s] = sum_n D x_h[n]``;
    - each (expert, head) applies its factorised linear ``W_eh = U_h V_eh`` (rank r; ``U_h`` shared across
      experts when ``shared_down``), followed by an expert-wise RMSNorm, ReLU and dropout;
    - combine ``C = softmax over (expert, slot)`` per instance and head: ``y[n, h] = sum_{e,s} C s_out[e,h,s]``.

    ``rank=None`` picks the rank whose parameter count is closest to the ``nn.Linear(in_dim, out_dim)`` it
    replaces (:func:`budget_rank`).

    Shapes: ``x`` (B, N, in_dim) or (N, in_dim), ``mask`` (B, N) bool with True for real instances (or None)
    -> (B, N, out_dim) (padding rows are 0). After a forward, ``last_dispatch`` (B, N, E, H, S) and
    ``last_combine`` (B, N, H, E*S) hold the detached weights.
    """

    def __init__(
        self,
        in_dim: int,
        out_dim: int,
        num_experts: int = 8,
        num_slots: int = 4,
        num_heads: int = 4,
        slot_dim: int = 64,
        rank: int | None = None,
        dropout: float = 0.1,
        shared_down: bool = True,
    ) -> None:
        super().__init__()
        if min(in_dim, out_dim, num_experts, num_slots, num_heads, slot_dim) < 1:
            raise ConfigError("Mammoth: in_dim, out_dim, num_experts, num_slots, num_heads, slot_dim must be >= 1")
        if slot_dim % num_heads or out_dim % num_heads:
            raise ConfigError(
                f"Mammoth: slot_dim ({slot_dim}) and out_dim ({out_dim}) must be divisible by num_heads ({num_heads})"
            )
        self.in_dim, self.out_dim = in_dim, out_dim
        self.num_experts, self.num_slots, self.num_heads = num_experts, num_slots, num_heads
        self.head_in, self.head_out = slot_dim // num_heads, out_dim // num_heads
        self.shared_down = shared_down
        self.rank = rank or budget_rank(in_dim, out_dim, num_experts, num_slots, num_heads, slot_dim, shared_down)

        self.query = nn.Linear(in_dim, slot_dim)
        nn.init.xavier_uniform_(self.query.weight)
        nn.init.zeros_(self.query.bias)
        self.query_norm = nn.LayerNorm(slot_dim, bias=False)
        self.slot_norm = nn.LayerNorm(self.head_in, bias=False)
        self.slot_embeds = nn.Parameter(
            nn.init.xavier_uniform_(torch.empty(num_experts, num_heads, num_slots, self.head_in))
        )

        eh = num_experts * num_heads
        if shared_down:
            self.down = LinearExperts(num_heads, self.head_in, self.rank)
            self.up = LinearExperts(eh, self.rank, self.head_out)
            nn.init.zeros_(self.up.bias)
        else:
            self.experts = LowRankExperts(eh, self.head_in, self.rank, self.head_out)
        self.expert_norm = nn.Parameter(torch.ones(num_experts, out_dim))
        self.dropout = nn.Dropout(dropout)
        self.last_dispatch: Tensor | None = None
        self.last_combine: Tensor | None = None

    def routing_logits(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """Per-head queries (B, N, H, q) and slot logits (B, N, E, H, S)."""
        b, n, _ = x.shape
        queries = self.query_norm(self.query(x)).view(b, n, self.num_heads, self.head_in)
        logits = torch.einsum("bnhd,ehsd->bnehs", queries, self.slot_norm(self.slot_embeds))
        return queries, logits

    def _experts(self, slots: Tensor) -> Tensor:
        """(E, H, M, q) slot inputs, M = B*S -> (E, H, M, o), one low-rank linear per (expert, head)."""
        e, h, m, _ = slots.shape
        if self.shared_down:
            low = torch.baddbmm(self.down.bias[:, None], slots.transpose(0, 1).reshape(h, e * m, -1), self.down.weight)
            low = low.view(h, e, m, -1).transpose(0, 1).reshape(e * h, m, -1)
            out = torch.baddbmm(self.up.bias[:, None], low, self.up.weight)
        else:
            bank = self.experts
            out = torch.baddbmm(bank.b[:, None], torch.bmm(slots.reshape(e * h, m, -1), bank.u), bank.v)
        return out.view(e, h, m, self.head_out)

    def forward(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        if x.dim() == 2:
            return self.forward(x[None], None if mask is None else mask[None])[0]
        if x.dim() != 3 or x.shape[-1] != self.in_dim:
            raise ValueError(f"Mammoth expects (B, N, {self.in_dim}) instance features, got {tuple(x.shape)}")
        b, n, _ = x.shape
        e, h, s = self.num_experts, self.num_heads, self.num_slots
        queries, logits = self.routing_logits(x)
        combine = torch.softmax(logits.permute(0, 1, 3, 2, 4).reshape(b, n, h, e * s), dim=-1)
        if mask is not None:
            logits = logits.masked_fill(~mask[:, :, None, None, None], float("-inf"))
            combine = combine * mask[:, :, None, None]
        dispatch = torch.softmax(logits, dim=1)

        slots = torch.einsum("bnhd,bnehs->ehbsd", queries, dispatch).reshape(e, h, b * s, self.head_in)
        out = self._experts(slots).view(e, h, b, s, self.head_out).permute(2, 0, 3, 1, 4)  # (B, E, S, H, o)
        flat = out.reshape(b, e, s, h * self.head_out)
        flat = F.normalize(flat, dim=-1) * math.sqrt(self.out_dim) * self.expert_norm[None, :, None]  # RMSNorm
        out = self.dropout(F.relu(flat)).view(b, e * s, h, self.head_out)
        y = torch.einsum("bnhp,bphd->bnhd", combine, out).reshape(b, n, self.out_dim)

        self.last_dispatch, self.last_combine = dispatch.detach(), combine.detach()
        return y
