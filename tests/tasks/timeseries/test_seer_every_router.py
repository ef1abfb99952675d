"""Every router in ``zoo.moe.ROUTERS`` through SEER's patch mixture for one training step on tiny inputs (finite
loss, a routing came back, gradient reaches the router, a routing summary exists); a router whose choice for a patch
depends on the rest of the batch (expert choice) cannot route it and is refused with a ConfigError."""

from __future__ import annotations

import pytest
import torch

from zoo.errors import ConfigError
from zoo.moe import ROUTERS, routing_summary
from zoo.moe.testing import check_router_step
from zoo_tasks.timeseries.seer import SEERForecaster

TINY = dict(seq_len=32, pred_len=8, num_channels=2, d_model=16, n_heads=2, d_ff=32, num_experts=4, top_k=2)
REFUSED = {"expert_choice"}  # its experts for a patch depend on the other series of the batch


def test_the_refused_routers_are_routers():
    assert REFUSED <= set(ROUTERS) and "noisy_topk" not in REFUSED


@pytest.mark.parametrize("router", sorted(ROUTERS))
def test_every_router_trains_seer_for_one_step(router):
    if router in REFUSED:
        with pytest.raises(
            ConfigError, match=f"router {router!r} cannot route SEER's patch mixture.*routers that apply"
        ):
            SEERForecaster(router=router, **TINY)
        return
    torch.manual_seed(0)
    model = SEERForecaster(router=router, **TINY).train()
    batch = (torch.randn(3, 32, 2), torch.randn(3, 8, 2))
    loss, routings = model.loss_and_routing(batch)
    assert list(routings) == ["net.embedding.moe"]
    summary = routing_summary(routings).layers["net.embedding.moe"]
    assert summary.num_experts == 4 and summary.tokens == 3 * 2 * 4  # one token per patch: B x C x P
    check_router_step(model, loss, routings)
