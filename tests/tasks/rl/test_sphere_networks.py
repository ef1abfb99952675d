"""SPHERE's PPO networks: the MoE actor routes through zoo.moe with the configured router; its sparse dispatch
equals the reference's every-expert-on-every-state path (outputs, weighted features, gradients)."""

import pytest
import torch

from zoo.errors import ConfigError
from zoo.moe import ROUTERS, Routing
from zoo_tasks.rl.continual.networks import Critic, DenseActor, MoEActor, make_actor
from zoo_tasks.rl.continual.sphere import routed_features


def _pair(**kwargs):
    torch.manual_seed(0)
    sparse = MoEActor(7, 3, width=16, depth=2, num_experts=5, top_k=2, dispatch="sparse", **kwargs)
    dense = MoEActor(7, 3, width=16, depth=2, num_experts=5, top_k=2, dispatch="dense", **kwargs)
    dense.load_state_dict(sparse.state_dict())
    return sparse, dense


def test_sparse_dispatch_equals_every_expert_on_every_state():
    sparse, dense = _pair()
    x = torch.randn(40, 7)
    a, b = sparse(x), dense(x)
    torch.testing.assert_close(a.mean, b.mean)
    torch.testing.assert_close(a.weights, b.weights)
    phi_a, phi_b = routed_features(a.weights, a.features), routed_features(b.weights, b.features)
    torch.testing.assert_close(phi_a, phi_b)
    (a.mean.square().sum() + phi_a.square().sum()).backward()
    (b.mean.square().sum() + phi_b.square().sum()).backward()
    for (name, p), q in zip(sparse.named_parameters(), dense.parameters()):
        torch.testing.assert_close(p.grad, q.grad, msg=name, rtol=1e-4, atol=1e-6)


def test_moe_actor_routes_through_zoo_moe_with_the_configured_router():
    actor = make_actor("moe", 7, 3, 16, 2, num_experts=5, top_k=2, router="noisy_topk", router_kwargs=None)
    assert type(actor.router) is ROUTERS["noisy_topk"]
    out = actor(torch.randn(12, 7))
    assert isinstance(out.routing, Routing) and out.routing.num_tokens == 12 and out.routing.num_experts == 5
    assert out.weights.shape == (12, 5) and out.features.shape == (12, 5, 16)
    assert ((out.weights > 0).sum(1) == 2).all()  # top-2 of 5
    torch.testing.assert_close(out.weights.sum(1), torch.ones(12))


def test_dense_networks_shapes_and_state_independent_std():
    actor, critic = DenseActor(7, 3, width=16, depth=3), Critic(7, width=16, depth=3)
    out = actor(torch.randn(5, 7))
    assert out.mean.shape == (5, 3) and out.log_std.shape == (3,) and out.routing is None
    assert torch.equal(out.log_std, torch.zeros(3))
    assert critic(torch.randn(5, 7)).shape == (5,)
    assert len([m for m in actor.body if isinstance(m, torch.nn.Linear)]) == 3


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(dispatch="scatter"), "dispatch"),
        (dict(top_k=6), "top_k"),
        (dict(router="nope"), "unknown router 'nope'"),
        (dict(router="expert_choice"), "cannot route SPHERE's per-state actor gate"),
    ],
)
def test_bad_moe_settings_name_the_key(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        MoEActor(7, 3, width=8, depth=1, num_experts=5, **({"top_k": 2} | kwargs))
