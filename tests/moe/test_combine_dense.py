"""combine_dense (dense context experts) equals a slow per-token loop; padding gives exactly 0; the hook works."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from zoo.moe import Routing, combine_dense, make_router, mixture_weights


def _loop(expert_outputs, indices, weights, valid, scale, renormalize):
    """Per token: sum over its used slots of weight [* scale] [/ sum of those], times the expert's output."""
    T = expert_outputs.shape[0]
    out = torch.zeros(T, *expert_outputs.shape[2:], dtype=expert_outputs.dtype)
    for t in range(T):
        if valid is not None and not bool(valid[t]):
            continue
        terms = []
        for j in range(indices.shape[1]):
            e = int(indices[t, j])
            if e >= 0:
                w = weights[t, j] * (1.0 if scale is None else scale[t, e])
                terms.append((w, e))
        total = sum(float(w) for w, _ in terms) if renormalize else 1.0
        for w, e in terms:
            out[t] += w / max(total, 1e-12) * expert_outputs[t, e]
    return out


@settings(max_examples=25, deadline=None)
@given(
    tokens=st.integers(1, 12),
    experts=st.integers(1, 6),
    k=st.integers(1, 4),
    feature_shape=st.sampled_from([(), (3,), (2, 3)]),
    use_scale=st.booleans(),
    renormalize=st.booleans(),
    padding=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_combine_dense_matches_per_token_loop(tokens, experts, k, feature_shape, use_scale, renormalize, padding, seed):
    g = torch.Generator().manual_seed(seed)
    outputs = torch.randn(tokens, experts, *feature_shape, generator=g, dtype=torch.double)
    # distinct experts per token, some slots empty (-1), as routers give
    indices = torch.stack([torch.randperm(experts, generator=g)[: min(k, experts)] for _ in range(tokens)])
    indices = torch.where(torch.rand(indices.shape, generator=g) < 0.2, -1, indices)
    weights = torch.where(indices >= 0, torch.rand(indices.shape, generator=g, dtype=torch.double), 0.0)
    valid = torch.rand(tokens, generator=g) > 0.3 if padding else None
    scale = torch.rand(tokens, experts, generator=g, dtype=torch.double) if use_scale else None
    r = Routing(indices, weights, torch.zeros(tokens, experts), valid)
    fast = combine_dense(outputs, r, expert_scale=scale, renormalize=renormalize)
    assert fast.shape == (tokens, *feature_shape)
    torch.testing.assert_close(fast, _loop(outputs, indices, weights, valid, scale, renormalize))


def test_padding_tokens_give_exactly_zero_even_with_nan_outputs_elsewhere():
    torch.manual_seed(0)
    router = make_router("soft", 5, 3)
    valid = torch.tensor([True, False, True, False])
    r = router(torch.randn(4, 5), valid=valid)
    outputs = torch.randn(4, 3, 2)
    outputs[~valid] = 1e30  # whatever the experts computed on padding never reaches the output
    y = combine_dense(outputs, r, renormalize=True)
    assert torch.equal(y[~valid], torch.zeros(2, 2))
    assert torch.all(y[valid].abs() < 1e3)


def test_expert_scale_multiplies_and_renormalize_sums_to_one_over_used_experts():
    idx = torch.tensor([[0, 2], [1, -1]])
    r = Routing(idx, torch.tensor([[0.6, 0.4], [1.0, 0.0]]), torch.zeros(2, 3))
    scale = torch.tensor([[2.0, 5.0, 0.5], [3.0, 3.0, 3.0]])
    w = mixture_weights(r, expert_scale=scale)
    torch.testing.assert_close(w, torch.tensor([[1.2, 0.0, 0.2], [0.0, 3.0, 0.0]]))
    wn = mixture_weights(r, expert_scale=scale, renormalize=True)
    torch.testing.assert_close(wn.sum(-1), torch.ones(2))
    torch.testing.assert_close(wn[0], torch.tensor([1.2, 0.0, 0.2]) / 1.4)
    assert torch.all(wn[r.dense_weights() == 0] == 0)  # unused experts stay unused
    outputs = torch.eye(3)[None].expand(2, 3, 3)  # expert e outputs the one-hot e: y reads off the weights
    torch.testing.assert_close(combine_dense(outputs, r, expert_scale=scale, renormalize=True), wn)


def test_gradients_reach_router_scale_and_experts():
    torch.manual_seed(0)
    router = make_router("topk", 4, 3, top_k=2)
    r = router(torch.randn(6, 4))
    outputs = torch.randn(6, 3, 2, requires_grad=True)
    scale = torch.rand(6, 3, requires_grad=True)
    combine_dense(outputs, r, expert_scale=scale, renormalize=True).square().sum().backward()
    assert router.gate.weight.grad.abs().sum() > 0 and scale.grad.abs().sum() > 0
    used = r.dense_weights() > 0
    assert torch.all(outputs.grad.abs().sum(-1)[~used] == 0) and torch.all(outputs.grad.abs().sum(-1)[used] > 0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_output_dtype_follows_the_expert_outputs(dtype):
    r = Routing(torch.tensor([[0]]), torch.ones(1, 1), torch.zeros(1, 2))
    assert combine_dense(torch.ones(1, 2, 3, dtype=dtype), r).dtype == dtype
