"""Routers by name. Each maps tokens (T, dim) [+ condition] to a `Routing` (see `zoo.moe.routing`)."""

from __future__ import annotations

from torch import nn

from zoo.errors import ConfigError
from zoo.moe.routers.base import Router, broadcast_condition
from zoo.moe.routers.dirichlet import DirichletRouter
from zoo.moe.routers.dtop_p import DTopPRouter
from zoo.moe.routers.expert_choice import ExpertChoiceRouter
from zoo.moe.routers.grouped import GroupedRouter
from zoo.moe.routers.kern import KernRouter
from zoo.moe.routers.noisy_topk import NoisyTopKRouter
from zoo.moe.routers.sigmoid_bias import SigmoidBiasRouter
from zoo.moe.routers.soft import SoftRouter
from zoo.moe.routers.topk import TopKRouter

ROUTERS: dict[str, type[Router]] = {
    "topk": TopKRouter,
    "noisy_topk": NoisyTopKRouter,
    "sigmoid_bias": SigmoidBiasRouter,
    "expert_choice": ExpertChoiceRouter,
    "dtop_p": DTopPRouter,
    "soft": SoftRouter,
    "dirichlet": DirichletRouter,
    "kern": KernRouter,
    "grouped": GroupedRouter,
}


def make_router(name: str, dim: int, num_experts: int, top_k: int = 2, condition_dim: int = 0, **kwargs) -> nn.Module:
    """Build a router by name (see ``ROUTERS``); extra keyword arguments go to the router class."""
    if name not in ROUTERS:
        raise ConfigError(f"unknown router {name!r}; valid: {', '.join(sorted(ROUTERS))}")
    return ROUTERS[name](dim, num_experts, top_k=top_k, condition_dim=condition_dim, **kwargs)


__all__ = ["ROUTERS", "Router", "broadcast_condition", "make_router", *[c.__name__ for c in ROUTERS.values()]]
