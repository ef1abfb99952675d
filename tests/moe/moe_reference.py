"""Slow, obviously-correct references: loop over tokens, run each selected expert on one token."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from zoo.moe.experts import FFNExperts, LinearExperts, LowRankExperts, ModuleListExperts, SwiGLUExperts


def expert_on_token(bank, e: int, x):
    """One expert on one token (d,) -> (o,), written out from the parameters."""
    if isinstance(bank, FFNExperts):
        h = F.gelu(x @ bank.w1[e] + bank.b1[e])
        return h @ bank.w2[e] + bank.b2[e]
    if isinstance(bank, SwiGLUExperts):
        h = x @ bank.w1[e]
        gate, up = h[: bank.hidden], h[bank.hidden :]
        return (F.silu(gate) * up) @ bank.w2[e]
    if isinstance(bank, LowRankExperts):
        return (x @ bank.u[e]) @ bank.v[e] + bank.b[e]
    if isinstance(bank, LinearExperts):
        return x @ bank.weight[e] + bank.bias[e]
    if isinstance(bank, ModuleListExperts):
        return bank.experts[e](x[None])[0]
    raise TypeError(type(bank))


def reference_combine(x, indices, weights, bank, valid=None, out_dim=None):
    T = x.shape[0]
    out = []
    for t in range(T):
        acc = torch.zeros(out_dim or x.shape[1], dtype=x.dtype)
        if valid is None or bool(valid[t]):
            for j in range(indices.shape[1]):
                e = int(indices[t, j])
                if e >= 0:
                    acc = acc + weights[t, j] * expert_on_token(bank, e, x[t])
        out.append(acc)
    return torch.stack(out)


def reference_capacity(indices, valid, capacity):
    """Switch priority: slot 0 of every token (token order), then slot 1, ...; first C per expert stay."""
    T, k = indices.shape
    used: dict[int, int] = {}
    keep = torch.zeros(T, k, dtype=torch.bool)
    for j in range(k):
        for t in range(T):
            e = int(indices[t, j])
            if e < 0 or (valid is not None and not bool(valid[t])):
                continue
            if used.get(e, 0) < capacity:
                used[e] = used.get(e, 0) + 1
                keep[t, j] = True
    return keep
