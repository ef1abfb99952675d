"""Every router in ``zoo.moe.ROUTERS`` through MAMMOTH for one training step on tiny bags. MAMMOTH's Soft-MoE slots
are its router (every instance reaches every expert through softmax-weighted slots), so ``"soft"`` trains (finite
loss, a routing over the bags' instances, gradient reaching the slot router) and every other router is refused with
a ConfigError naming the routers that apply."""

from __future__ import annotations

import pytest
import torch

from zoo.errors import ConfigError
from zoo.moe import ROUTERS, routing_summary
from zoo.moe.testing import check_router_step
from zoo_tasks.mil.mammoth import ROUTERS as MAMMOTH_ROUTERS
from zoo_tasks.mil.module import MILModule

TINY = dict(in_dim=12, projection="mammoth", dim=8, num_experts=3, num_slots=2, num_heads=2, slot_dim=8, rank=2)


def _batch():
    gen = torch.Generator().manual_seed(0)
    mask = torch.ones(3, 5, dtype=torch.bool)
    mask[1, 3:] = False
    return {"x": torch.randn(3, 5, 12, generator=gen), "mask": mask, "y": torch.tensor([0.0, 1.0, 1.0])}


def test_the_routers_that_apply_are_routers():
    assert set(MAMMOTH_ROUTERS) == {"soft"} <= set(ROUTERS)


@pytest.mark.parametrize("router", sorted(ROUTERS))
def test_every_router_trains_mammoth_for_one_step_or_is_refused(router):
    if router not in MAMMOTH_ROUTERS:
        with pytest.raises(ConfigError, match=f"router {router!r} cannot route MAMMOTH's Soft-MoE slots.*apply: soft"):
            MILModule(router=router, **TINY)
        return
    torch.manual_seed(0)
    model = MILModule(router=router, plot_bags=0, **TINY).train()
    batch = _batch()
    out = model.training_step(batch, 0)
    loss, routings = out["loss"], out["routing"]
    summary = routing_summary(routings).layers["projection"]
    assert summary.num_experts == 3 and summary.tokens == int(batch["mask"].sum())  # padding never counts
    check_router_step(model, loss, routings)
    # the slot router's parameters (check_router_step looks for "router" in names; these keep their recorded names)
    for grad in (model.projection.slot_embeds.grad, model.projection.query.weight.grad):
        assert grad is not None and torch.isfinite(grad).all() and grad.abs().sum() > 0


def test_unknown_router_and_router_kwargs_raise():
    with pytest.raises(ConfigError, match="unknown router 'nope'"):
        MILModule(router="nope", **TINY)
    with pytest.raises(ConfigError, match="router_kwargs"):
        MILModule(router="soft", router_kwargs={"temperature": 2.0}, **TINY)
