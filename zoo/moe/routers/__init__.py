"""Routers by name. Each maps tokens (T, dim) [+ condition] to a `Routing` (see `zoo.moe.routing`).

``ROUTERS`` holds the built-in routers and those that installed plugins declare in the ``zoo.routers`` entry-point
group (see `zoo.moe.routers.registry`, docs/writing-a-router.md); ``make_router`` / ``require_router`` take either.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable

from zoo.moe.errors import ConfigError
from zoo.moe.routers.base import Router, broadcast_condition
from zoo.moe.routers.dirichlet import DirichletRouter
from zoo.moe.routers.dtop_p import DTopPRouter
from zoo.moe.routers.expert_choice import ExpertChoiceRouter
from zoo.moe.routers.grouped import GroupedRouter
from zoo.moe.routers.kern import KernRouter
from zoo.moe.routers.noisy_topk import NoisyTopKRouter
from zoo.moe.routers.registry import (
    BUILTIN_ROUTERS,
    ENTRY_POINT_GROUP,
    ROUTERS,
    RouterRegistry,
    RouterSource,
    router_sources,
)
from zoo.moe.routers.sigmoid_bias import SigmoidBiasRouter
from zoo.moe.routers.soft import SoftRouter
from zoo.moe.routers.topk import TopKRouter

CAPABILITIES: dict[str, str] = {
    "per_token_choice": "each token's experts must depend on that token alone, not on the rest of the batch",
    "fixed_k": "every token must get the same number of experts",
    "sparse": "a token must use fewer than all experts",
    "convex_weights": "a token's expert weights must sum to 1 (a convex combination of the experts' outputs)",
}


def routers_that_apply(needs: Iterable[str] = ()) -> list[str]:
    """Names in ``ROUTERS`` whose class has every capability in ``needs`` (see ``CAPABILITIES``), sorted; a plugin
    that does not load is left out."""
    needs = _check_needs(needs)
    return sorted(name for name, cls in ROUTERS.usable().items() if all(getattr(cls, n) for n in needs))


def _check_needs(needs: Iterable[str]) -> tuple[str, ...]:
    needs = (needs,) if isinstance(needs, str) else tuple(needs)
    unknown = sorted(set(needs) - set(CAPABILITIES))
    if unknown:
        raise ValueError(f"unknown router capability {unknown}; valid: {', '.join(sorted(CAPABILITIES))}")
    return needs


def require_router(name: str, mixture: str, needs: Iterable[str] = ("per_token_choice",)) -> type[Router]:
    """The router class for ``name``, after checking it can route ``mixture``; raises ConfigError otherwise.

    ``needs``: capability names (``CAPABILITIES``; class attributes of every `Router`) the mixture relies on. A
    task calls this where it builds a routed mixture whose gate is not a plain batch of independent tokens, e.g.
    one gate per sequence or per environment step, where expert choice would route a sample by the other
    samples in the batch (and degenerate at batch size 1)::

        require_router(router, "SEER's per-series gate", needs=("per_token_choice",))
        -> ConfigError: router 'expert_choice' cannot route SEER's per-series gate: each token's experts must
           depend on that token alone, not on the rest of the batch; routers that apply: dirichlet, dtop_p, ...

    An unknown ``name`` raises the same ConfigError as ``make_router`` (listing every router).
    """
    cls = _router_class(name)
    needs = _check_needs(needs)
    missing = [n for n in needs if not getattr(cls, n)]
    if missing:
        why = "; ".join(CAPABILITIES[n] for n in missing)
        raise ConfigError(
            f"router {name!r} cannot route {mixture}: {why}; routers that apply: {', '.join(routers_that_apply(needs))}"
        )
    return cls


def _router_class(name: str) -> type[Router]:
    if name not in ROUTERS:
        raise ConfigError(f"unknown router {name!r}; valid: {', '.join(sorted(ROUTERS))}")
    return ROUTERS[name]  # a broken or clashing plugin raises its one-line ConfigError


def make_router(
    name: str,
    dim: int,
    num_experts: int,
    top_k: int = 2,
    condition_dim: int = 0,
    *,
    mixture: str | None = None,
    needs: Iterable[str] = (),
    **kwargs,
) -> Router:
    """Build a router by name (see ``ROUTERS``); extra keyword arguments (``router_kwargs``) go to its class.

    With ``needs`` (capabilities, see ``require_router``) it first checks that the router can route ``mixture``.
    Unknown names and keyword arguments the router does not take raise ConfigError listing the valid ones.
    """
    cls = require_router(name, mixture or "this mixture", needs) if needs else _router_class(name)
    params = inspect.signature(cls.__init__).parameters
    if not any(p.kind is p.VAR_KEYWORD for p in params.values()):
        accepted = [p for p in params if p not in ("self", "dim", "num_experts", "top_k", "condition_dim")]
        unknown = sorted(set(kwargs) - set(accepted))
        if unknown:
            raise ConfigError(
                f"router_kwargs: router {name!r} takes no {unknown}; it takes: {', '.join(accepted) or 'none'}"
            )
    return cls(dim, num_experts, top_k=top_k, condition_dim=condition_dim, **kwargs)


__all__ = [
    "BUILTIN_ROUTERS",
    "CAPABILITIES",
    "ENTRY_POINT_GROUP",
    "ROUTERS",
    "Router",
    "RouterRegistry",
    "RouterSource",
    "broadcast_condition",
    "make_router",
    "require_router",
    "router_sources",
    "routers_that_apply",
    "DTopPRouter",
    "DirichletRouter",
    "ExpertChoiceRouter",
    "GroupedRouter",
    "KernRouter",
    "NoisyTopKRouter",
    "SigmoidBiasRouter",
    "SoftRouter",
    "TopKRouter",
]
