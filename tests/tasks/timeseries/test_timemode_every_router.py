"""Every router in ``zoo.moe.ROUTERS`` through TimeMoDE's FFN mixtures (prompt + timestep in the router input) for
one training step on tiny inputs; a router whose choice for a token depends on the rest of the batch (expert
choice: one generated window would depend on the others being sampled with it) is refused with a ConfigError."""

from __future__ import annotations

import pytest
import torch

from zoo.errors import ConfigError
from zoo.moe import ROUTERS, routing_summary
from zoo.moe.testing import check_router_step
from zoo_tasks.timeseries.generation.module import TimeMoDE

TINY = dict(seq_len=8, patch_len=4, d_model=16, depth=2, n_heads=2, ffn_hidden=32, num_experts=4, top_k=2)
TINY.update(num_latents=4, latent_dim=8, prompt_dim=4, timesteps=10, plots=False)
REFUSED = {"expert_choice"}


def test_the_refused_routers_are_routers():
    assert REFUSED <= set(ROUTERS)


@pytest.mark.parametrize("router", sorted(ROUTERS))
def test_every_router_trains_timemode_for_one_step(router):
    if router in REFUSED:
        with pytest.raises(ConfigError, match=f"router {router!r} cannot route TimeMoDE's token FFN mixture"):
            TimeMoDE(router=router, **TINY)
        return
    torch.manual_seed(0)
    model = TimeMoDE(router=router, **TINY).train()
    loss, routings = model.loss_and_routing((torch.randn(3, 8, 1), torch.zeros(3, dtype=torch.long)))
    assert list(routings) == ["net.blocks.0.ffn", "net.blocks.1.ffn"]
    assert routing_summary(routings).layers["net.blocks.0.ffn"].tokens == 3 * 2  # B x patches
    check_router_step(model, loss, routings)
