"""`zoo.moe`: the shared Mixture-of-Experts layer library (routers, experts, dispatch, aux losses, stats).

from zoo.moe import MoE
layer = MoE(dim=512, hidden=1024, num_experts=64, top_k=2, router="topk")
y = layer(x)                       # (..., 512) -> (..., 512)
loss = task_loss + layer.aux_loss()
"""

from zoo.moe.dispatch import apply_capacity, combine_outputs, dispatch_combine, sort_by_expert
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
from zoo.moe.layer import MoE, moe_layers
from zoo.moe.losses import LOSSES, cv_squared_loss, entropy_loss, erc_loss, load_balance_loss, z_loss
from zoo.moe.routers import ROUTERS, Router, make_router
from zoo.moe.routing import Routing
from zoo.moe.segment_mm import segment_mm
from zoo.moe.stats import routing_stats

__all__ = [
    "EXPERTS",
    "LOSSES",
    "ROUTERS",
    "FFNExperts",
    "LinearExperts",
    "LowRankExperts",
    "MoE",
    "ModuleListExperts",
    "Router",
    "Routing",
    "StackedExperts",
    "SwiGLUExperts",
    "apply_capacity",
    "combine_outputs",
    "cv_squared_loss",
    "dispatch_combine",
    "entropy_loss",
    "erc_loss",
    "load_balance_loss",
    "make_experts",
    "make_router",
    "moe_layers",
    "routing_stats",
    "segment_mm",
    "sort_by_expert",
    "z_loss",
]
