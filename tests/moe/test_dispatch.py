"""Fast sparse dispatch equals the token-by-token reference; gradients go where they should."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from moe_reference import reference_capacity, reference_combine

from zoo.moe import MoE, MoEOutput, Routing, apply_capacity, combine_dense, dispatch_combine, make_experts, segment_mm
from zoo.moe.dispatch import expert_capacity

EXPERT_TYPES = ["ffn", "swiglu", "lowrank", "linear"]


@settings(max_examples=12, deadline=None)
@given(
    tokens=st.integers(1, 24),
    num_experts=st.integers(1, 9),
    top_k=st.integers(1, 3),
    expert_type=st.sampled_from(EXPERT_TYPES),
    seed=st.integers(0, 2**16),
)
def test_dispatch_matches_reference(tokens, num_experts, top_k, expert_type, seed):
    torch.manual_seed(seed)
    d, h, o = 6, 10, 5
    bank = make_experts(expert_type, num_experts, d, h, out_dim=o, rank=3).double()
    x = torch.randn(tokens, d, dtype=torch.double)
    indices = torch.randint(-1, num_experts, (tokens, top_k))  # -1 = empty slot
    weights = torch.rand(tokens, top_k, dtype=torch.double)
    valid = torch.rand(tokens) > 0.2
    r = Routing(indices, weights, torch.zeros(tokens, num_experts), valid)
    fast = dispatch_combine(x, r, bank, o)
    with torch.no_grad():
        slow = reference_combine(x, indices, weights, bank, valid, o)
    torch.testing.assert_close(fast, slow)


@pytest.mark.parametrize("router", ["topk", "sigmoid_bias", "expert_choice", "dtop_p", "kern", "soft"])
@pytest.mark.parametrize("expert_type", EXPERT_TYPES)
def test_layer_matches_reference(router, expert_type):
    torch.manual_seed(0)
    layer = MoE(8, 12, 5, top_k=2, router=router, experts=expert_type, rank=3).double().eval()
    x = torch.randn(2, 7, 8, dtype=torch.double)
    out = layer(x)
    assert isinstance(out, MoEOutput)
    y, r = out
    with torch.no_grad():
        slow = reference_combine(x.reshape(-1, 8), r.indices, r.weights, layer.experts)
    torch.testing.assert_close(y.reshape(-1, 8), slow)


def test_segment_mm_gradcheck():
    torch.manual_seed(0)
    x = torch.randn(7, 3, dtype=torch.double, requires_grad=True)
    w = torch.randn(4, 3, 2, dtype=torch.double, requires_grad=True)
    b = torch.randn(4, 2, dtype=torch.double, requires_grad=True)
    counts = [2, 0, 4, 1]  # an empty expert must get an exact zero gradient
    assert torch.autograd.gradcheck(lambda x, w, b: segment_mm(x, w, counts, b), (x, w, b))
    segment_mm(x, w, counts, b).sum().backward()
    assert torch.equal(w.grad[1], torch.zeros(3, 2)) and torch.equal(b.grad[1], torch.zeros(2))


@pytest.mark.parametrize("expert_type", EXPERT_TYPES)
def test_gradients_reach_router_and_every_selected_expert(expert_type):
    torch.manual_seed(1)
    layer = MoE(8, 12, 6, top_k=2, experts=expert_type, rank=3)
    x = torch.randn(10, 8)
    y, r = layer(x)
    y.square().sum().backward()
    used = set(r.indices.flatten().tolist())
    assert layer.router.gate.weight.grad is not None and layer.router.gate.weight.grad.abs().sum() > 0
    first = next(iter(layer.experts.parameters()))
    for e in range(6):
        g = first.grad[e].abs().sum()
        assert (g > 0) == (e in used), (e, used)


def test_capacity_drop_count_matches_reference():
    torch.manual_seed(2)
    T, k, E, cf = 40, 2, 4, 0.6
    indices = torch.randint(0, E, (T, k))
    indices[:, 1] = (indices[:, 0] + 1) % E  # distinct experts per token, as routers give
    valid = torch.rand(T) > 0.1
    r = apply_capacity(Routing(indices, torch.rand(T, k), torch.zeros(T, E), valid), cf)
    cap = expert_capacity(int(valid.sum()), k, E, cf)
    keep = reference_capacity(indices, valid, cap)
    live = valid[:, None].expand(T, k)
    assert torch.equal(r.indices >= 0, keep | ~live)  # padding slots are kept as-is, dispatch skips them
    assert isinstance(r.stats["dropped"], torch.Tensor)  # a tensor: apply_capacity never waits for the device
    assert int(r.stats["dropped"]) == int((live & ~keep).sum())
    assert int(r.stats["dropped_tokens"]) == int((valid & ~keep.any(1)).sum())
    assert int(r.stats["capacity"]) == cap
    assert torch.all(r.weights[~(keep | ~live)] == 0)
    assert torch.bincount(r.indices[keep], minlength=E).max() <= cap


def test_layer_capacity_reports_dropped_in_stats():
    torch.manual_seed(3)
    layer = MoE(8, 12, 4, top_k=2, capacity_factor=0.5)
    _, r = layer(torch.randn(32, 8))
    assert r.stats["dropped"] > 0
    assert (r.indices == -1).sum() == r.stats["dropped"]


def test_padding_tokens_get_no_routed_output():
    torch.manual_seed(4)
    layer = MoE(8, 12, 4, top_k=2)
    x = torch.randn(3, 5, 8)
    valid = torch.ones(3, 5, dtype=torch.bool)
    valid[:, 3:] = False
    y, r = layer(x, valid=valid)
    assert torch.all(y[:, 3:] == 0)
    torch.testing.assert_close(y[:, :3], layer(x[:, :3]).output)
    assert torch.equal(r.valid, valid.reshape(-1))


def test_combine_dense_matches_dispatch():
    torch.manual_seed(5)
    bank = make_experts("ffn", 4, 6, 8)
    x = torch.randn(9, 6)
    idx = torch.tensor([[0, 2], [1, -1]] * 4 + [[3, 0]])
    r = Routing(idx, torch.rand(9, 2), torch.zeros(9, 4), valid=torch.rand(9) > 0.3)
    torch.testing.assert_close(combine_dense(bank.forward_dense(x), r), dispatch_combine(x, r, bank))


def test_shared_experts_add_a_dense_ffn():
    torch.manual_seed(6)
    layer = MoE(8, 12, 4, top_k=1, num_shared=2)
    assert layer.shared.w1.shape == (1, 8, 24)
    x = torch.randn(5, 8)
    y, routing = layer(x)
    routed = dispatch_combine(x, routing, layer.experts)
    torch.testing.assert_close(y, routed + layer.shared.forward_dense(x)[:, 0])
