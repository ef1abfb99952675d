"""Sparse dispatch: sort token slots by expert, run each expert on its segment, weighted scatter-add back.

No expert ever sees a token it was not routed to, and no "all experts on all tokens then mask" happens
on this path. Shapes: x (T, d), routing.indices / weights (T, k) -> y (T, o).
"""

from __future__ import annotations

import math
from dataclasses import replace

import torch
from torch import Tensor

from zoo.moe.routing import Routing


def sort_by_expert(indices: Tensor, num_experts: int, valid: Tensor | None = None):
    """Flatten (T, k) slots, keep real ones, sort them by expert (stable: token order inside a segment).

    Returns (slot_ids (N,) into the flattened (T*k,) slots, token_ids (N,), counts list of E ints).
    """
    k = indices.shape[1]
    flat = indices.reshape(-1)
    keep = flat >= 0
    if valid is not None:
        keep = keep & valid.reshape(-1, 1).expand(-1, k).reshape(-1)
    slot_ids = keep.nonzero().squeeze(1)
    experts = flat[slot_ids]
    order = torch.argsort(experts, stable=True)
    slot_ids = slot_ids[order]
    counts = torch.bincount(experts, minlength=num_experts).tolist()
    return slot_ids, torch.div(slot_ids, k, rounding_mode="floor"), counts


def dispatch_combine(x: Tensor, routing: Routing, experts, out_dim: int | None = None) -> Tensor:
    """y[t] = sum_j weights[t, j] * expert_{indices[t, j]}(x[t]) over non-empty slots of real tokens.

    ``experts`` is any bank with ``forward_sorted(x_sorted, counts)`` (see ``zoo.moe.experts``).
    """
    slot_ids, token_ids, counts = sort_by_expert(routing.indices, routing.num_experts, routing.valid)
    y_sorted = experts.forward_sorted(x.index_select(0, token_ids), counts)
    w = routing.weights.reshape(-1).index_select(0, slot_ids).to(y_sorted.dtype)
    out = y_sorted.new_zeros(x.shape[0], out_dim or y_sorted.shape[-1])
    return out.index_add(0, token_ids, y_sorted * w[:, None])


def mixture_weights(routing: Routing, expert_scale: Tensor | None = None, renormalize: bool = False) -> Tensor:
    """(T, E) weights of a dense mixture: ``routing.dense_weights()`` ``[* expert_scale] [/ row sum]``, 0 on padding.

    ``expert_scale`` (T, E) is the per-expert reweighting hook (C²GMoE's confidence, curvature or deformation
    experts' own scores); with ``renormalize`` each real token's row is divided by its sum (clamped at 1e-12),
    so the experts it uses weigh 1 in total.
    """
    w = routing.dense_weights()
    if expert_scale is not None:
        w = w * expert_scale
    if renormalize:
        w = w / w.sum(-1, keepdim=True).clamp_min(1e-12)
    return w * routing.token_mask()[:, None].to(w.dtype)


def combine_dense(
    expert_outputs: Tensor, routing: Routing, expert_scale: Tensor | None = None, renormalize: bool = False
) -> Tensor:
    """Dense context experts: every expert ran on every token, a `Routing` weights them.

    ``y[t] = sum_e w[t, e] * expert_outputs[t, e]`` with ``w = mixture_weights(routing, expert_scale,
    renormalize)``. Shapes: expert_outputs (T, E, *F), routing over T tokens and E experts, expert_scale (T, E)
    -> (T, *F). Padding tokens (``routing.valid`` False) give exactly 0. For heterogeneous experts that compute
    every expert anyway (a GNN per hop, a policy per skill); sparse token experts use ``dispatch_combine``.
    """
    w = mixture_weights(routing, expert_scale, renormalize).to(expert_outputs.dtype)
    return torch.einsum("te,te...->t...", w, expert_outputs)


def expert_capacity(num_tokens: int, top_k: int, num_experts: int, capacity_factor: float) -> int:
    """Switch/GShard capacity: ceil(capacity_factor * tokens * k / E) slots per expert."""
    return max(1, math.ceil(capacity_factor * num_tokens * top_k / num_experts))


def apply_capacity(routing: Routing, capacity_factor: float) -> Routing:
    """Drop slots beyond each expert's capacity; dropped slots get index -1 and weight 0.

    Priority follows Switch/GShard: every token's first choice before any second choice, then token
    order. Padding tokens take no capacity. Adds stats ``dropped`` (slots), ``dropped_tokens`` (real tokens
    that lost every slot) and ``capacity``, as 0-dim tensors: nothing here waits for the device.
    """
    idx, T, k, E = routing.indices, routing.num_tokens, routing.indices.shape[1], routing.num_experts
    mask = routing.token_mask()
    if routing.valid is None:
        cap = torch.tensor(expert_capacity(T, k, E, capacity_factor), device=idx.device)
    else:  # expert_capacity on the device: same float64 arithmetic, no host sync
        n = mask.sum().double()
        cap = torch.ceil(capacity_factor * n * k / E).long().clamp_min(1)
    live = (idx >= 0) & mask[:, None]
    slot_major = idx.t().reshape(-1)  # slot j of all tokens, then slot j+1
    live_sm = live.t().reshape(-1)
    key = torch.where(live_sm, slot_major, E)  # dead slots sort last, never count
    order = torch.argsort(key, stable=True)
    sorted_key = key[order]
    starts = torch.searchsorted(sorted_key, sorted_key, right=False)
    rank = torch.empty_like(order)
    rank[order] = torch.arange(order.numel(), device=idx.device) - starts
    drop = (rank >= cap) & live_sm
    drop = drop.reshape(k, T).t()
    new_idx = torch.where(drop, -1, idx)
    new_w = torch.where(drop, torch.zeros_like(routing.weights), routing.weights)
    lost_all = live.any(1) & ~(live & ~drop).any(1)
    stats = dict(routing.stats, dropped=drop.sum(), dropped_tokens=lost_all.sum(), capacity=cap)
    return replace(routing, indices=new_idx, weights=new_w, stats=stats)
