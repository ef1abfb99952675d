"""MoE layer: contract, heterogeneous experts, state-dict layout and round trip."""

import pytest
import torch
from torch import nn

from zoo.moe import ROUTERS, MoE, MoEOutput, Routing, combine_dense, make_router

LAYOUT = {
    "ffn": {"experts.w1": (6, 8, 12), "experts.b1": (6, 12), "experts.w2": (6, 12, 4), "experts.b2": (6, 4)},
    "swiglu": {"experts.w1": (6, 8, 24), "experts.w2": (6, 12, 4)},
    "lowrank": {"experts.u": (6, 8, 3), "experts.v": (6, 3, 4), "experts.b": (6, 4)},
    "linear": {"experts.weight": (6, 8, 4), "experts.bias": (6, 4)},
}


@pytest.mark.parametrize("expert_type", sorted(LAYOUT))
def test_state_dict_layout_and_round_trip(expert_type, tmp_path):
    torch.manual_seed(0)
    kw = dict(top_k=2, router="sigmoid_bias", experts=expert_type, out_dim=4, rank=3, condition_dim=2)
    a = MoE(8, 12, 6, **kw)
    a.router.expert_bias.uniform_()  # buffers travel too
    sd = a.state_dict()
    expected = {"router.gate.weight": (6, 10), "router.expert_bias": (6,), **LAYOUT[expert_type]}
    assert {k: tuple(v.shape) for k, v in sd.items()} == expected
    torch.save(sd, tmp_path / "moe.pt")
    torch.manual_seed(1)
    b = MoE(8, 12, 6, **kw)
    b.load_state_dict(torch.load(tmp_path / "moe.pt"))
    x, c = torch.randn(5, 8), torch.randn(5, 2)
    a.eval(), b.eval()
    torch.testing.assert_close(a(x, condition=c).output, b(x, condition=c).output)


def test_shared_and_router_state_keys():
    layer = MoE(8, 12, 4, top_k=2, router="dtop_p", num_shared=2)
    keys = set(layer.state_dict())
    assert {"router.log_temp", "router.threshold", "router.integral", "shared.w1", "shared.b2"} <= keys
    assert layer.state_dict()["shared.w1"].shape == (1, 8, 24)


def test_contract_shapes_and_routing_fields():
    layer = MoE(dim=16, hidden=32, num_experts=8, top_k=2, router="topk")
    x = torch.randn(2, 3, 5, 16)
    out = layer(x)
    assert isinstance(out, MoEOutput) and out.output is out[0] and out.routing is out[1]
    y, r = out
    assert y.shape == x.shape
    assert isinstance(r, Routing)
    assert r.indices.shape == (30, 2) and r.indices.dtype == torch.long
    assert r.weights.shape == (30, 2) and r.logits.shape == (30, 8)
    assert isinstance(r.aux, dict) and r.stats == {}  # no statistics computed in forward
    assert not hasattr(layer, "last_routing")
    assert MoE(16, 32, 8, out_dim=7)(x).output.shape == (2, 3, 5, 7)


@pytest.mark.parametrize("router", ["soft", "topk"])
def test_heterogeneous_module_list_experts(router):
    torch.manual_seed(0)
    experts = nn.ModuleList(
        [nn.Linear(6, 3), nn.Sequential(nn.Linear(6, 9), nn.ReLU(), nn.Linear(9, 3)), nn.Linear(6, 3)]
    )
    layer = MoE(6, 0, 3, top_k=2, router=router, experts=experts, out_dim=3)
    x = torch.randn(11, 6)
    y, routing = layer(x)
    dense = torch.stack([m(x) for m in experts], dim=1)  # (T, E, 3)
    torch.testing.assert_close(y, combine_dense(dense, routing))
    y.sum().backward()
    assert all(p.grad is not None for p in experts.parameters())
    assert "experts.experts.1.0.weight" in layer.state_dict()


def test_router_used_alone_with_own_combine():
    torch.manual_seed(0)
    router = make_router("topk", 6, 4, top_k=1)
    per_expert = torch.randn(9, 4, 2, 5)  # (T, E, *F) from some heterogeneous experts
    r = router(torch.randn(9, 6))
    out = combine_dense(per_expert, r)
    assert out.shape == (9, 2, 5)
    torch.testing.assert_close(out[0], r.weights[0, 0] * per_expert[0, r.indices[0, 0]])


def test_routers_registry_lists_all_names():
    from zoo.moe.routers import BUILTIN_ROUTERS

    assert set(BUILTIN_ROUTERS) <= set(ROUTERS)
    assert set(BUILTIN_ROUTERS) == {
        "topk",
        "noisy_topk",
        "sigmoid_bias",
        "expert_choice",
        "dtop_p",
        "soft",
        "dirichlet",
        "kern",
        "grouped",
    }
    assert all(cls.__doc__ for cls in ROUTERS.values())
