"""Routing statistics on demand: `routing_summary` turns routings into a typed, JSON-able `RoutingSummary`.

Nothing here runs inside a forward; the routing-stats callback and the leaderboard records call it (the same
code), so every task reports the same numbers: per layer the load per expert, router entropy, load entropy,
max/mean load, dead experts, dropped slots and tokens. Summaries of several steps add up with ``merge``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import torch
from torch import Tensor

from zoo.moe.routing import Routing

SCALAR_KEYS = ("entropy", "load_entropy", "max_over_mean_load", "dead_experts", "dropped")


def _number(v) -> float | None:
    if isinstance(v, Tensor):
        return float(v.detach().float().mean()) if v.numel() else None
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v)
    return None


@dataclass
class LayerSummary:
    """Routing statistics of one mixture over one or more steps (real tokens only; padding never counts).

    Accumulated fields (add up across steps): ``counts`` (E,) non-dropped token slots per expert (a routing in
    which every token uses every expert counts each expert's summed combine weight instead), ``entropy_sum``
    (sum over tokens of the router entropy / log E), ``tokens`` (real tokens), ``dropped`` (slots lost to a
    capacity limit), ``dropped_tokens`` (real tokens that lost every slot), ``steps``, and ``extra_sums``: the
    sums over steps of the router's own scalar ``routing.stats`` (e.g. dtop_p's "mean_active").
    Derived (properties): ``load`` (fractions, sum 1), ``entropy`` (mean normalised router entropy in [0, 1],
    1 = uniform router), ``load_entropy`` (entropy of ``load`` / log E, 1 = perfectly balanced),
    ``max_over_mean_load``, ``dead_experts`` (experts that got no slot), ``extra`` (means over steps).
    """

    counts: list[float]
    entropy_sum: float = 0.0
    tokens: int = 0
    dropped: int = 0
    dropped_tokens: int = 0
    steps: int = 1
    extra_sums: dict[str, float] = field(default_factory=dict)

    @property
    def num_experts(self) -> int:
        return len(self.counts)

    @property
    def load(self) -> list[float]:
        total = sum(self.counts)
        return [c / total for c in self.counts] if total else [0.0] * len(self.counts)

    @property
    def entropy(self) -> float:
        return self.entropy_sum / self.tokens if self.tokens else 0.0

    @property
    def load_entropy(self) -> float:
        if not sum(self.counts):
            return 0.0
        log_e = math.log(self.num_experts) if self.num_experts > 1 else 1.0
        return -sum(p * math.log(p) for p in self.load if p > 0) / log_e

    @property
    def max_over_mean_load(self) -> float:
        load = self.load
        mean = sum(load) / len(load) if load else 0.0
        return max(load) / mean if mean > 0 else 0.0

    @property
    def dead_experts(self) -> int:
        """Experts that got no slot (sparse) or under 0.1 % of the mean weight mass (dense)."""
        mean = sum(self.counts) / len(self.counts) if self.counts else 0.0
        return sum(c <= 1e-3 * mean for c in self.counts)

    @property
    def extra(self) -> dict[str, float]:
        return {k: v / self.steps for k, v in self.extra_sums.items()}

    def scalars(self) -> dict[str, float]:
        """The ``SCALAR_KEYS`` values (what the callback logs per layer)."""
        return {k: float(getattr(self, k)) for k in SCALAR_KEYS}

    def merge(self, other: LayerSummary) -> LayerSummary:
        """The summary of both: counts and sums add (expert counts must match)."""
        if other.num_experts != self.num_experts:
            raise ValueError(f"cannot merge summaries over {self.num_experts} and {other.num_experts} experts")
        extra = dict(self.extra_sums)
        for k, v in other.extra_sums.items():
            extra[k] = extra.get(k, 0.0) + v
        return LayerSummary(
            counts=[a + b for a, b in zip(self.counts, other.counts, strict=True)],
            entropy_sum=self.entropy_sum + other.entropy_sum,
            tokens=self.tokens + other.tokens,
            dropped=self.dropped + other.dropped,
            dropped_tokens=self.dropped_tokens + other.dropped_tokens,
            steps=self.steps + other.steps,
            extra_sums=extra,
        )

    def to_dict(self) -> dict:
        """JSON-able: load list, entropy, load_entropy, max_over_mean_load, dead_experts, dropped,
        dropped_tokens, tokens, steps, and the router's extra stats when it has any."""
        out = {
            "num_experts": self.num_experts,
            "load": [round(v, 6) for v in self.load],
            "entropy": round(self.entropy, 6),
            "load_entropy": round(self.load_entropy, 6),
            "max_over_mean_load": round(self.max_over_mean_load, 6),
            "dead_experts": self.dead_experts,
            "dropped": self.dropped,
            "dropped_tokens": self.dropped_tokens,
            "tokens": self.tokens,
            "steps": self.steps,
        }
        if self.extra_sums:
            out["extra"] = {k: round(v, 6) for k, v in sorted(self.extra.items())}
        return out


@torch.no_grad()
def layer_summary(routing: Routing) -> LayerSummary:
    """One routing's `LayerSummary` (counts, entropy and token count come to the host in one transfer)."""
    E = routing.num_experts
    mask = routing.token_mask()
    if routing.indices.shape[-1] >= E:
        # every token used every expert (dense context experts, soft slots): slot counts are equal by
        # construction, so the load is where the mixture weight goes
        counts = routing.dense_weights().detach()[mask].double().sum(0)
    else:
        counts = torch.bincount(routing.indices[(routing.indices >= 0) & mask[:, None]], minlength=E)[:E]
    log_e = math.log(E) if E > 1 else 1.0
    p = routing.router_probs()[mask].float()
    ent_sum = (-(p * p.clamp_min(1e-12).log()).sum(-1) / log_e).sum()
    host = torch.cat([counts.double(), ent_sum.double()[None], mask.sum().double()[None]]).tolist()
    stats = routing.stats
    extra = {}
    for k, v in stats.items():
        if k in ("dropped", "dropped_tokens", "capacity", "load"):
            continue
        n = _number(v)
        if n is not None:
            extra[k] = n
    return LayerSummary(
        counts=[int(c) if c == int(c) else c for c in host[:E]],
        entropy_sum=host[E],
        tokens=int(host[E + 1]),
        dropped=int(_number(stats.get("dropped", 0)) or 0),
        dropped_tokens=int(_number(stats.get("dropped_tokens", 0)) or 0),
        extra_sums=extra,
    )


@dataclass
class RoutingSummary:
    """Per-layer routing statistics: ``layers`` maps a mixture's name to its `LayerSummary`.

    ``merge`` adds another summary (another step, another process); ``to_dict()`` is JSON-able:
    ``{layer: {"load": [...], "entropy": ..., "load_entropy": ..., "max_over_mean_load": ..., "dead_experts": ...,
    "dropped": ..., "dropped_tokens": ..., "tokens": ..., "steps": ..., "num_experts": ...}}``.
    """

    layers: dict[str, LayerSummary] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.layers)

    def merge(self, other: RoutingSummary) -> RoutingSummary:
        """Both summaries together (layers in either; a layer in both adds up). Returns a new summary."""
        layers = dict(self.layers)
        for name, s in other.layers.items():
            layers[name] = layers[name].merge(s) if name in layers else s
        return RoutingSummary(layers)

    def add(self, routings: Mapping[str, Routing]) -> RoutingSummary:
        """Accumulate one more step's routings in place (returns self)."""
        self.layers = self.merge(routing_summary(routings)).layers
        return self

    def to_dict(self) -> dict[str, dict]:
        return {name: s.to_dict() for name, s in self.layers.items()}


def routing_summary(routings: Mapping[str, Routing] | Routing) -> RoutingSummary:
    """The `RoutingSummary` of one step's routings (``{layer_name: Routing}``; a bare Routing is named "moe")."""
    if isinstance(routings, Routing):
        routings = {"moe": routings}
    return RoutingSummary({name: layer_summary(r) for name, r in routings.items()})
