"""Every zoo.moe router on DroneDINO's MoE block (the dynamic experts): one training step's loss is sound."""

from __future__ import annotations

import pytest
import torch

from zoo.errors import ConfigError
from zoo.moe import ROUTERS, weighted_aux_loss
from zoo.moe.testing import check_router_step
from zoo_tasks.detection.moe_ffn import HeteroMoEFFN, MoEContext


@pytest.mark.parametrize("router", sorted(ROUTERS))
def test_every_router_trains_the_hetero_moe_block(router):
    torch.manual_seed(0)
    try:
        block = HeteroMoEFFN(embed_dims=8, feedforward_channels=16, num_tasks=3, num_dynamic=4, top_k=2, router=router)
    except ConfigError as exc:  # a router that cannot route these tokens must say so
        assert router in str(exc)
        return
    block.context = MoEContext(task_ids=torch.tensor([0, 1]))
    x = torch.randn(2, 6, 8)
    y = block(x)
    routings = dict(block.context.routings)
    loss = (y - x.flip(1)).pow(2).mean() + weighted_aux_loss(routings, {"load_balance": 0.01, "task_recognition": 0.1})
    check_router_step(block, loss, routings)
