"""`zoo.moe`: the shared Mixture-of-Experts layer library (routers, experts, dispatch, aux losses, stats).

Stands alone: ``import zoo.moe`` imports torch and nothing else of the zoo (no Lightning); its exceptions are
``zoo.moe.errors.ZooError`` / ``ConfigError`` (re-exported by ``zoo.errors``). Routing is a value, never state::

    from zoo.moe import MoE, routing_summary, weighted_aux_loss
    layer = MoE(dim=512, hidden=1024, num_experts=64, top_k=2, router="topk", aux_weights={"load_balance": 1e-2})
    y, routing = layer(x)                          # x (..., 512) -> y (..., 512); routing over prod(...) tokens
    loss = task_loss + layer.aux_loss(routing)     # or weighted_aux_loss([r1, r2], {"load_balance": 1e-2})
    routing_summary({"block0": routing}).to_dict() # load, entropy, dead experts, dropped (on demand)

Three combiners, each with a `Routing`: sparse token dispatch (``MoE`` / ``dispatch_combine``), dense context
experts (``combine_dense``: every expert ran, the routing weights them, optional per-expert ``expert_scale``) and
Soft-MoE slots (``soft_moe``, in ``zoo.moe.soft``). A mixture whose gate is not a batch of independent tokens
checks its router with ``require_router(name, mixture, needs=...)``.

The public names load lazily (PEP 562), so ``import zoo.moe.errors`` (which ``zoo.errors`` does) stays free of
torch; ``import zoo.moe`` then ``zoo.moe.MoE`` imports what it needs.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING

_EXPORTS = {
    "AUX_NAMES": "zoo.moe.weighting",
    "CAPABILITIES": "zoo.moe.routers",
    "ConfigError": "zoo.moe.errors",
    "EXPERTS": "zoo.moe.experts",
    "ExpertParallelMoE": "zoo.moe.expert_parallel",
    "FFNExperts": "zoo.moe.experts",
    "LOSSES": "zoo.moe.losses",
    "LayerSummary": "zoo.moe.stats",
    "LinearExperts": "zoo.moe.experts",
    "LowRankExperts": "zoo.moe.experts",
    "MoE": "zoo.moe.layer",
    "MoEOutput": "zoo.moe.routing",
    "ModuleListExperts": "zoo.moe.experts",
    "ParallelGroups": "zoo.moe.parallel_groups",
    "ROUTERS": "zoo.moe.routers",
    "Router": "zoo.moe.routers",
    "Routing": "zoo.moe.routing",
    "RoutingSummary": "zoo.moe.stats",
    "StackedExperts": "zoo.moe.experts",
    "SwiGLUExperts": "zoo.moe.experts",
    "ZooError": "zoo.moe.errors",
    "apply_capacity": "zoo.moe.dispatch",
    "build_parallel_groups": "zoo.moe.parallel_groups",
    "combine_dense": "zoo.moe.dispatch",
    "cv_squared_loss": "zoo.moe.losses",
    "dispatch_combine": "zoo.moe.dispatch",
    "entropy_loss": "zoo.moe.losses",
    "erc_loss": "zoo.moe.losses",
    "gather_state_dict": "zoo.moe.parallel_state_dict",
    "gradient_buckets": "zoo.moe.parallel_groups",
    "layer_summary": "zoo.moe.stats",
    "local_expert_init": "zoo.moe.local_init",
    "load_balance_loss": "zoo.moe.losses",
    "make_experts": "zoo.moe.experts",
    "make_router": "zoo.moe.routers",
    "mixture_weights": "zoo.moe.dispatch",
    "reduce_gradients": "zoo.moe.parallel_groups",
    "require_router": "zoo.moe.routers",
    "routers_that_apply": "zoo.moe.routers",
    "routing_summary": "zoo.moe.stats",
    "segment_mm": "zoo.moe.segment_mm",
    "SoftMoEOutput": "zoo.moe.soft",
    "shard_state_dict": "zoo.moe.parallel_state_dict",
    "slot_routing": "zoo.moe.soft",
    "slot_weights": "zoo.moe.soft",
    "soft_moe": "zoo.moe.soft",
    "sort_by_expert": "zoo.moe.dispatch",
    "to_expert_parallel": "zoo.moe.expert_parallel",
    "weighted_aux_loss": "zoo.moe.weighting",
    "z_loss": "zoo.moe.losses",
}

if TYPE_CHECKING:  # for type checkers and IDEs: the same names, eagerly
    from zoo.moe.dispatch import apply_capacity, combine_dense, dispatch_combine, mixture_weights, sort_by_expert
    from zoo.moe.errors import ConfigError, ZooError
    from zoo.moe.expert_parallel import ExpertParallelMoE, to_expert_parallel
    from zoo.moe.experts import (
        EXPERTS,
        FFNExperts,
        LinearExperts,
        LowRankExperts,
        ModuleListExperts,
        StackedExperts,
        SwiGLUExperts,
        make_experts,
    )
    from zoo.moe.layer import MoE
    from zoo.moe.local_init import local_expert_init
    from zoo.moe.losses import LOSSES, cv_squared_loss, entropy_loss, erc_loss, load_balance_loss, z_loss
    from zoo.moe.parallel_groups import ParallelGroups, build_parallel_groups, gradient_buckets, reduce_gradients
    from zoo.moe.parallel_state_dict import gather_state_dict, shard_state_dict
    from zoo.moe.routers import CAPABILITIES, ROUTERS, Router, make_router, require_router, routers_that_apply
    from zoo.moe.routing import MoEOutput, Routing
    from zoo.moe.segment_mm import segment_mm
    from zoo.moe.soft import SoftMoEOutput, slot_routing, slot_weights, soft_moe
    from zoo.moe.stats import LayerSummary, RoutingSummary, layer_summary, routing_summary
    from zoo.moe.weighting import AUX_NAMES, weighted_aux_loss


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'zoo.moe' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


class _Package(types.ModuleType):
    def __setattr__(self, name: str, value) -> None:
        # importing a submodule binds it on the package; where a public name equals a submodule's name
        # (segment_mm), the public function wins, as it would after an eager ``from ... import``
        if name in _EXPORTS and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


__all__ = [
    "AUX_NAMES",
    "CAPABILITIES",
    "EXPERTS",
    "LOSSES",
    "ROUTERS",
    "ConfigError",
    "ExpertParallelMoE",
    "FFNExperts",
    "LayerSummary",
    "LinearExperts",
    "LowRankExperts",
    "MoE",
    "MoEOutput",
    "ModuleListExperts",
    "ParallelGroups",
    "Router",
    "Routing",
    "RoutingSummary",
    "SoftMoEOutput",
    "StackedExperts",
    "SwiGLUExperts",
    "ZooError",
    "apply_capacity",
    "build_parallel_groups",
    "combine_dense",
    "cv_squared_loss",
    "dispatch_combine",
    "entropy_loss",
    "erc_loss",
    "gather_state_dict",
    "gradient_buckets",
    "layer_summary",
    "load_balance_loss",
    "local_expert_init",
    "make_experts",
    "make_router",
    "mixture_weights",
    "reduce_gradients",
    "require_router",
    "routers_that_apply",
    "routing_summary",
    "segment_mm",
    "shard_state_dict",
    "slot_routing",
    "slot_weights",
    "soft_moe",
    "sort_by_expert",
    "to_expert_parallel",
    "weighted_aux_loss",
    "z_loss",
]
