"""Every zoo.moe router on DroneDINO's MoE block (the dynamic experts): one training step's loss is sound, and the
routers the block refuses are the ones DroneDINO's conformance case declares (none). The conformance suite checks the
whole detector, which needs mmdet; the block does not, so this runs wherever the suite skips DroneDINO."""

from __future__ import annotations

import pytest
import torch

from zoo.conformance import registry_routers
from zoo.errors import ConfigError
from zoo.moe import weighted_aux_loss
from zoo.moe.testing import check_router_step
from zoo.registry import get_task
from zoo_tasks.detection.moe_ffn import HeteroMoEFFN, MoEContext

REFUSED = set(get_task("dronedino").conformance[0].refuses)


@pytest.mark.parametrize("router", registry_routers())
def test_every_router_trains_the_hetero_moe_block_or_is_refused_as_declared(router):
    torch.manual_seed(0)
    try:
        block = HeteroMoEFFN(embed_dims=8, feedforward_channels=16, num_tasks=3, num_dynamic=4, top_k=2, router=router)
    except ConfigError as exc:
        assert router in REFUSED and router in str(exc) and "that apply" in str(exc), str(exc)
        return
    assert router not in REFUSED, f"{router} is declared refused but builds"
    block.context = MoEContext(task_ids=torch.tensor([0, 1]))
    x = torch.randn(2, 6, 8)
    y = block(x)
    routings = dict(block.context.routings)
    loss = (y - x.flip(1)).pow(2).mean() + weighted_aux_loss(routings, {"load_balance": 0.01, "task_recognition": 0.1})
    check_router_step(block, loss, routings)
