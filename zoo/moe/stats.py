"""Routing diagnostics from a `Routing`: load per expert, entropy, dead experts, dropped tokens."""

from __future__ import annotations

import math

import torch

from zoo.moe.routing import Routing

SCALAR_KEYS = ("entropy", "load_entropy", "max_over_mean_load", "dead_experts", "dropped")


@torch.no_grad()
def routing_stats(routing: Routing, num_experts: int | None = None) -> dict:
    """Detached stats over real tokens (padding excluded).

    - ``load`` (E,) tensor: fraction of non-dropped token slots per expert (sums to 1).
    - ``entropy``: mean per-token router entropy / log E, in [0, 1] (1 = uniform router).
    - ``load_entropy``: entropy of ``load`` / log E (1 = perfectly balanced load).
    - ``max_load`` / ``mean_load``: largest and mean entry of ``load``; ``max_over_mean_load`` their ratio.
    - ``dead_experts``: experts that got no token. ``dropped`` / ``dropped_tokens``: slots / tokens lost
      to a capacity limit (0 without one). ``tokens``: real tokens.
    """
    E = num_experts or routing.num_experts
    mask = routing.token_mask()
    counts = torch.bincount(routing.indices[(routing.indices >= 0) & mask[:, None]], minlength=E)[:E].float()
    total = counts.sum()
    load = counts / total if total > 0 else counts
    log_e = math.log(E) if E > 1 else 1.0
    p = routing.router_probs()[mask].float()
    ent = float(-(p * p.clamp_min(1e-12).log()).sum(-1).mean() / log_e) if p.shape[0] else 0.0
    load_ent = float(-(load * load.clamp_min(1e-12).log()).sum() / log_e) if total > 0 else 0.0
    max_load, mean_load = float(load.max()), float(load.mean())
    return {
        "load": load,
        "entropy": ent,
        "load_entropy": load_ent,
        "max_load": max_load,
        "mean_load": mean_load,
        "max_over_mean_load": max_load / mean_load if mean_load > 0 else 0.0,
        "dead_experts": int((counts == 0).sum()),
        "dropped": int(routing.stats.get("dropped", 0)),
        "dropped_tokens": int(routing.stats.get("dropped_tokens", 0)),
        "tokens": int(mask.sum()),
    }
