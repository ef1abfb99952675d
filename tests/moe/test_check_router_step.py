"""zoo.moe.testing.check_router_step passes a sound step with every router and names what is wrong otherwise."""

import pytest
import torch
from torch import nn

from zoo.moe import ROUTERS, MoE
from zoo.moe.testing import check_router_step


class _Model(nn.Module):
    def __init__(self, router: str):
        super().__init__()
        kw = {"num_tasks": 2, "experts_per_task": 1, "num_shared_group": 1} if router == "grouped" else {}
        self.moe = MoE(6, 8, 5, top_k=2, router=router, router_kwargs=kw, condition_dim=2 if kw else 0)

    def loss_and_routing(self, x, cond=None):
        y, routing = self.moe(x, condition=cond)
        return y.square().mean() + self.moe.aux_loss(routing), {"moe": routing}

    def experts_only_loss(self):
        return sum(p.sum() for n, p in self.named_parameters() if "router" not in n)


@pytest.mark.parametrize("router", sorted(ROUTERS))
def test_every_router_passes_one_step_through_a_moe(router):
    torch.manual_seed(0)
    model = _Model(router)
    nn.init.normal_(model.moe.router.gate.weight)  # noisy_topk starts at zero: give the gate a direction
    cond = torch.nn.functional.one_hot(torch.randint(0, 2, (12,)), 2).float() if router == "grouped" else None
    loss, routings = model.loss_and_routing(torch.randn(12, 6), cond)
    check_router_step(model, loss, routings)


def test_failures_are_named():
    torch.manual_seed(0)
    model = _Model("topk")
    loss, routings = model.loss_and_routing(torch.randn(4, 6))
    with pytest.raises(AssertionError, match="not finite"):
        check_router_step(model, loss * float("nan"), routings)
    with pytest.raises(AssertionError, match="no routing"):
        check_router_step(model, loss, {})
    y, routing = model.moe(torch.randn(4, 6))
    with pytest.raises(AssertionError, match="no gradient reached the router"):
        check_router_step(model, y.detach().sum() + model.experts_only_loss(), {"moe": routing})
