"""Every zoo.moe router gates MoE-GS's per-pixel expert blend, or is refused with a ConfigError."""

from __future__ import annotations

import pytest
import torch
from test_moe_gs_moe import make_batch, make_exports

import zoo.moe
from zoo.errors import ConfigError
from zoo.moe.testing import check_router_step
from zoo_tasks.splatting.moe import MoEGS

APPLIES = set(zoo.moe.routers_that_apply(("per_token_choice",)))


@pytest.mark.parametrize("router", [*sorted(zoo.moe.ROUTERS), "moe_gs"])
def test_every_router(tmp_path, router):
    exports = make_exports(tmp_path, n=20)
    if router != "moe_gs" and router not in APPLIES:
        with pytest.raises(ConfigError, match="per-pixel"):
            MoEGS(experts=exports, router=router)
        return
    torch.manual_seed(0)
    moe = MoEGS(experts=exports, router=router, top_k=2, backend="tiles", aux_weights={"load_balance": 0.01})
    loss, routings = moe.loss_and_routing(make_batch(size=8))
    check_router_step(moe, loss, routings)
