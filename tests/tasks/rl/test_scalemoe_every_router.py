"""Every router in ``zoo.moe.ROUTERS`` as the gate of ScaleMoE's actor and critic (output- and feature-level
gating): one SAC update's loss on a tiny batch is finite, each gate's routing comes back and the gradient reaches
both gates (``zoo.moe.testing.check_router_step``). Routers whose choice for a state depends on the other states of
the batch (expert choice) cannot gate a policy that acts on one state at a time: ConfigError, expected."""

import pytest
import torch

from zoo.errors import ConfigError
from zoo.moe import ROUTERS
from zoo.moe.testing import check_router_step
from zoo_tasks.rl.replay import Batch
from zoo_tasks.rl.sac import SACAgent

CANNOT_GATE_A_STATE = {"expert_choice"}
OBS_DIM, ACT_DIM, B = 5, 2, 16


def _batch() -> Batch:
    g = torch.Generator().manual_seed(0)
    obs, next_obs = torch.randn(B, OBS_DIM, generator=g), torch.randn(B, OBS_DIM, generator=g)
    action = torch.rand(B, ACT_DIM, generator=g) * 2 - 1
    return Batch(obs, action, torch.rand(B, generator=g), next_obs, torch.zeros(B))


def _agent(router: str, gating: str) -> SACAgent:
    return SACAgent(
        architecture=f"scalemoe-{gating}",
        router=router,
        actor_hidden=8,
        critic_hidden=8,
        critic_blocks=1,
        num_experts=4,
        top_k=2,
        num_q=2,
    )


def test_every_router_is_listed_here_as_applying_or_not():
    assert CANNOT_GATE_A_STATE <= set(ROUTERS) and len(ROUTERS) > len(CANNOT_GATE_A_STATE)


@pytest.mark.parametrize("gating", ["output", "feature"])
@pytest.mark.parametrize("router", sorted(ROUTERS))
def test_router_gates_actor_and_critic_for_one_sac_update(router, gating):
    if router in CANNOT_GATE_A_STATE:
        with pytest.raises(ConfigError, match=rf"router '{router}' cannot route ScaleMoE's per-state gate"):
            _agent(router, gating)
        return
    torch.manual_seed(0)
    agent = _agent(router, gating)
    agent.build(OBS_DIM, ACT_DIM)
    loss, routings = agent.loss_and_routing(_batch())
    assert sorted(routings) == ["actor", "critic.0", "critic.1"]
    assert all(r.num_tokens == B and r.num_experts == 4 for r in routings.values())
    check_router_step(agent, loss, routings)
    gates = {"actor": agent.actor.router} | {f"critic.{i}": c.router for i, c in enumerate(agent.critic.critics)}
    for name, gate in gates.items():
        assert type(gate) is ROUTERS[router], f"the {name} gate is not the configured router"
        grads = [p.grad for p in gate.parameters() if p.requires_grad]
        assert any(g is not None and g.abs().sum() > 0 for g in grads), f"no gradient reached the {name} gate"
    assert all(p.grad is None for p in agent.target_critic.parameters())  # the target is never trained
