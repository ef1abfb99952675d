"""Every router in ``zoo.moe.ROUTERS`` as the gate of SPHERE's MoE actor: one PPO minibatch's actor loss (with the
SPHERE penalty) is finite, the routing comes back and the gradient reaches the gate
(``zoo.moe.testing.check_router_step``). Routers whose choice for a state depends on the rest of the batch (expert
choice) cannot gate a policy acting one state at a time: ConfigError, expected."""

import pytest
import torch

from zoo.errors import ConfigError
from zoo.moe import ROUTERS
from zoo.moe.testing import check_router_step
from zoo_tasks.rl.continual.ppo import ContinualPPO

CANNOT_GATE_A_STATE = {"expert_choice"}


def test_every_router_is_listed_here_as_applying_or_not():
    assert CANNOT_GATE_A_STATE <= set(ROUTERS) and len(ROUTERS) > len(CANNOT_GATE_A_STATE)


@pytest.mark.parametrize("dispatch", ["sparse", "dense"])
@pytest.mark.parametrize("router", sorted(ROUTERS))
def test_router_gates_the_actor_for_one_ppo_minibatch(router, dispatch):
    kwargs = dict(actor="moe", penalty="sphere", router=router, dispatch=dispatch, width=8, depth=1, num_experts=4)
    if router in CANNOT_GATE_A_STATE:
        with pytest.raises(ConfigError, match=rf"router '{router}' cannot route SPHERE's per-state actor gate"):
            ContinualPPO(**kwargs)
        return
    torch.manual_seed(0)
    agent = ContinualPPO(**kwargs)
    agent.build(6, 2)
    g = torch.Generator().manual_seed(0)
    obs, actions = torch.randn(16, 6, generator=g), torch.randn(16, 2, generator=g)
    loss, penalty, _, out = agent.actor_losses(obs, actions, torch.randn(16, generator=g), torch.randn(16, generator=g))
    assert type(agent.actor.router) is ROUTERS[router]
    assert torch.isfinite(penalty)
    check_router_step(agent, loss + penalty, {"actor": out.routing})
