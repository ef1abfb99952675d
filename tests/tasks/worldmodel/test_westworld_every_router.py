"""Every router of zoo.moe on WestWorld's system gate (one dense-combined gate per trajectory variate)."""

import pytest
import torch

from zoo.errors import ConfigError
from zoo.moe import ROUTERS
from zoo.moe.testing import check_router_step
from zoo_tasks.worldmodel.data import token_struct
from zoo_tasks.worldmodel.module import WorldModel
from zoo_tasks.worldmodel.robots import robot_structure

REFUSED = {"expert_choice"}  # the gate routes one sequence by its own system token, never by the rest of the batch


def _batch():
    s = robot_structure("dmc_cartpole")
    struct, dist = token_struct(s)
    x = torch.randn(2, 7, s.obs_dim + s.act_dim)
    return {"x": x, "obs_dim": s.obs_dim, "obs_valid": torch.ones(s.obs_dim, dtype=torch.bool), "struct": struct,
            "dist": dist, "robot": "dmc_cartpole"}  # fmt: skip


@pytest.mark.parametrize("router", sorted(ROUTERS))
def test_every_router(router):
    kwargs = dict(bins=16, dim=8, blocks=2, heads=2, ffn_hidden=8, d_state=2, prefix=3, router=router, top_k=2)
    if router in REFUSED:
        with pytest.raises(ConfigError, match="system gate"):
            WorldModel(method="westworld", **kwargs)
        return
    torch.manual_seed(0)
    model = WorldModel(method="westworld", **kwargs)
    model.train()
    loss, routings = model.loss_and_routing(_batch())
    assert set(routings) == {"block0", "block1"}
    assert routings["block0"].num_tokens == 2 * 4  # batch x observation variates
    check_router_step(model, loss, routings)
