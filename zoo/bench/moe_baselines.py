"""Reference MoE implementations the `zoo bench moe` table compares `zoo.moe.MoE` against.

All route with the same softmax top-k gate and (except the dense floor) share one set of stacked expert
weights with the `MoE` layer under test, so their outputs can be checked against each other.
Shapes: x (T, d) -> y (T, d); stacked w1 (E, d, h), b1 (E, h), w2 (E, h, d), b2 (E, d).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from zoo.moe.dispatch import sort_by_expert


def _route(gate: nn.Linear, x: Tensor, k: int) -> tuple[Tensor, Tensor]:
    w, idx = torch.softmax(gate(x).float(), -1).topk(k, dim=-1)
    return w / w.sum(-1, keepdim=True), idx


class OutputOnly(nn.Module):
    """``zoo.moe.MoE`` as a plain (T, d) -> (T, d) module for the table: its ``MoEOutput.output`` (the routing,
    with the aux losses the router attached, is computed as always and dropped)."""

    def __init__(self, moe: nn.Module):
        super().__init__()
        self.moe = moe

    def forward(self, x: Tensor) -> Tensor:
        return self.moe(x).output


class DenseFloor(nn.Module):
    """(a) Dense FFN with hidden k * h: the same active parameters per token, the practical floor."""

    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.ff = nn.Sequential(nn.Linear(dim, hidden), nn.GELU(), nn.Linear(hidden, dim))

    def forward(self, x: Tensor) -> Tensor:
        return self.ff(x)


class LoopMask(nn.Module):
    """(b) What popular libraries ship: a ModuleList of experts, loop over experts, select tokens with a
    boolean mask, index_add the weighted output back (HF Mixtral/Switch style)."""

    def __init__(self, gate: nn.Linear, w1, b1, w2, b2, top_k: int):
        super().__init__()
        self.gate, self.top_k = gate, top_k
        self.experts = nn.ModuleList()
        for e in range(w1.shape[0]):
            l1, l2 = nn.Linear(w1.shape[1], w1.shape[2]), nn.Linear(w2.shape[1], w2.shape[2])
            with torch.no_grad():
                (
                    l1.weight.copy_(w1[e].t()),
                    l1.bias.copy_(b1[e]),
                    l2.weight.copy_(w2[e].t()),
                    l2.bias.copy_(b2[e]),
                )
            self.experts.append(nn.Sequential(l1, nn.GELU(), l2))

    def forward(self, x: Tensor) -> Tensor:
        w, idx = _route(self.gate, x, self.top_k)
        out = torch.zeros_like(x)
        for e, expert in enumerate(self.experts):
            sel = idx == e
            mask = sel.any(-1)
            if not bool(mask.any()):
                continue
            tok = mask.nonzero().squeeze(1)
            we = (w * sel).sum(-1)[tok]
            out = out.index_add(0, tok, expert(x[tok]) * we[:, None])
        return out


class GShardEinsum(nn.Module):
    """(c) GShard (Lepikhin et al. 2020) one-hot einsum dispatch: groups of S tokens, capacity
    C = ceil(cf * k * S / E) per expert and group, dispatch/combine tensors (G, S, E, C)."""

    def __init__(
        self,
        gate: nn.Linear,
        w1,
        b1,
        w2,
        b2,
        top_k: int,
        group_size: int = 1024,
        capacity_factor: float = 1.25,
    ):
        super().__init__()
        self.gate, self.top_k, self.group_size, self.capacity_factor = (
            gate,
            top_k,
            group_size,
            capacity_factor,
        )
        self.w1, self.b1, self.w2, self.b2 = w1, b1, w2, b2

    def forward(self, x: Tensor) -> Tensor:
        T, d = x.shape
        E, k = self.w1.shape[0], self.top_k
        S = min(self.group_size, T)
        G = math.ceil(T / S)
        xg = F.pad(x, (0, 0, 0, G * S - T)).view(G, S, d)
        w, idx = _route(self.gate, xg, k)  # (G, S, k)
        C = max(1, math.ceil(self.capacity_factor * k * S / E))
        onehot = F.one_hot(idx, E).float()  # (G, S, k, E)
        slot_major = onehot.transpose(1, 2).reshape(G, k * S, E)  # first choices take capacity first
        pos = ((slot_major.cumsum(1) - 1) * slot_major).sum(-1).view(G, k, S).transpose(1, 2)  # (G, S, k)
        keep = (pos < C).float()
        pos_onehot = F.one_hot(pos.long().clamp(max=C - 1), C).float() * keep[..., None]  # (G, S, k, C)
        dispatch = torch.einsum("gske,gskc->gsec", onehot, pos_onehot)
        combine = torch.einsum("gske,gskc,gsk->gsec", onehot, pos_onehot, w)
        expert_in = torch.einsum("gsec,gsd->egcd", dispatch, xg)
        h = F.gelu(torch.einsum("egcd,edh->egch", expert_in, self.w1) + self.b1[:, None, None])
        expert_out = torch.einsum("egch,ehd->egcd", h, self.w2) + self.b2[:, None, None]
        return torch.einsum("gsec,egcd->gsd", combine, expert_out).reshape(G * S, d)[:T]


class _SharedExperts(nn.Module):
    """Holds the gate and the stacked expert weights ``w1 (E, d, h), b1 (E, h), w2 (E, h, d), b2 (E, d)`` that
    the variants below share with ours, so every variant computes the same function."""

    def __init__(self, gate: nn.Linear, w1, b1, w2, b2, top_k: int):
        super().__init__()
        self.gate, self.top_k, self.w1, self.b1, self.w2, self.b2 = gate, top_k, w1, b1, w2, b2


class NaiveSlice(_SharedExperts):
    """(d) Sorted dispatch but a Python loop that slices the stacked weight per expert (``w1[e]``) inside
    autograd: each slice's backward materialises a full (E, d, h) gradient, O(E^2) memory traffic."""

    def forward(self, x: Tensor) -> Tensor:
        w, idx = _route(self.gate, x, self.top_k)
        slot_ids, token_ids, counts = sort_by_expert(idx, self.w1.shape[0])
        outs = []
        for e, seg in enumerate(x.index_select(0, token_ids).split(counts)):
            if seg.shape[0]:
                outs.append(F.gelu(seg @ self.w1[e] + self.b1[e]) @ self.w2[e] + self.b2[e])
        y = torch.cat(outs) * w.reshape(-1)[slot_ids][:, None]
        return torch.zeros_like(x).index_add(0, token_ids, y)


class GroupedMM(_SharedExperts):
    """Variant of ours with ``torch._grouped_mm`` for the segment matmuls (biases gathered per row)."""

    def forward(self, x: Tensor) -> Tensor:
        w, idx = _route(self.gate, x, self.top_k)
        slot_ids, token_ids, counts = sort_by_expert(idx, self.w1.shape[0])
        expert_ids = idx.reshape(-1)[slot_ids]
        offs = torch.tensor(counts).cumsum(0).to(torch.int32)
        h = F.gelu(torch._grouped_mm(x.index_select(0, token_ids), self.w1, offs=offs) + self.b1[expert_ids])
        y = torch._grouped_mm(h, self.w2, offs=offs) + self.b2[expert_ids]
        return torch.zeros_like(x).index_add(0, token_ids, y * w.reshape(-1)[slot_ids][:, None])


class UnbindLoop(_SharedExperts):
    """Variant: plain autograd loop over ``w.unbind(0)`` (one gradient copy via stack, not O(E^2))."""

    def forward(self, x: Tensor) -> Tensor:
        w, idx = _route(self.gate, x, self.top_k)
        slot_ids, token_ids, counts = sort_by_expert(idx, self.w1.shape[0])
        params = zip(self.w1.unbind(0), self.b1.unbind(0), self.w2.unbind(0), self.b2.unbind(0), strict=True)
        outs = [
            F.gelu(seg @ w1 + b1) @ w2 + b2
            for seg, (w1, b1, w2, b2) in zip(x.index_select(0, token_ids).split(counts), params, strict=True)
            if seg.shape[0]
        ]
        y = torch.cat(outs) * w.reshape(-1)[slot_ids][:, None]
        return torch.zeros_like(x).index_add(0, token_ids, y)


class PaddedBMM(_SharedExperts):
    """Variant: every expert's rows padded to the largest segment, one ``baddbmm`` per layer for all experts.

    One parallel region per matmul (robust to contention) at the price of the padding FLOPs: the largest
    segment / the mean one, 1.26x at E=64 and 1.73x at E=256 with this gate."""

    def forward(self, x: Tensor) -> Tensor:
        w, idx = _route(self.gate, x, self.top_k)
        slot_ids, token_ids, counts = sort_by_expert(idx, self.w1.shape[0])
        E, cap = self.w1.shape[0], max(counts)
        cnt = torch.tensor(counts)
        expert_of = torch.repeat_interleave(torch.arange(E), cnt)
        pos = expert_of * cap + torch.arange(len(expert_of)) - (cnt.cumsum(0) - cnt)[expert_of]
        xp = x.new_zeros(E * cap, x.shape[1]).index_copy(0, pos, x.index_select(0, token_ids)).view(E, cap, -1)
        h = F.gelu(torch.baddbmm(self.b1[:, None, :], xp, self.w1))
        y = torch.baddbmm(self.b2[:, None, :], h, self.w2).reshape(E * cap, -1).index_select(0, pos)
        return torch.zeros_like(x).index_add(0, token_ids, y * w.reshape(-1)[slot_ids][:, None])
