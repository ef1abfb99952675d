"""Each router against an obvious reference, its budget, and its paper's defining property."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from zoo.errors import ConfigError
from zoo.moe import ROUTERS, MoE, make_router


@pytest.mark.parametrize("name", sorted(ROUTERS))
def test_every_router_returns_a_consistent_routing(name):
    torch.manual_seed(0)
    kw = {"num_tasks": 2, "experts_per_task": 1, "num_shared_group": 1} if name == "grouped" else {}
    router = make_router(name, 8, 6, top_k=2, **kw)
    x = torch.randn(20, 8)
    cond = torch.randint(0, 2, (20, 1)).float() if name == "grouped" else None
    r = router(x, condition=cond)
    assert r.indices.dtype == torch.long and r.indices.shape == r.weights.shape and r.indices.shape[0] == 20
    assert r.logits.shape == (20, 6) and r.indices.max() < 6 and r.indices.min() >= -1
    assert torch.all(r.weights[r.indices < 0] == 0) and torch.all(r.weights >= 0)
    for row in r.indices:  # no expert twice for one token
        used = row[row >= 0]
        assert used.unique().numel() == used.numel()
    assert {"load_balance", "z"} <= set(r.aux) and all(v.dim() == 0 for v in r.aux.values())


def test_unknown_router_is_a_config_error_listing_names():
    with pytest.raises(ConfigError, match="expert_choice") as err:
        MoE(8, 16, 4, router="nope")
    assert isinstance(err.value, ValueError)
    with pytest.raises(ConfigError, match="swiglu"):
        MoE(8, 16, 4, experts="nope")
    with pytest.raises(ConfigError, match="load_balance"):
        MoE(8, 16, 4, aux_weights={"nope": 1.0})


@settings(max_examples=10, deadline=None)
@given(tokens=st.integers(1, 30), experts=st.integers(2, 8), k=st.integers(1, 3), seed=st.integers(0, 999))
def test_topk_matches_sorting_reference(tokens, experts, k, seed):
    torch.manual_seed(seed)
    k = min(k, experts)
    router = make_router("topk", 5, experts, top_k=k)
    x = torch.randn(tokens, 5)
    r = router(x)
    probs = torch.softmax(x @ router.gate.weight.t(), -1)
    for t in range(tokens):
        order = sorted(range(experts), key=lambda e: -float(probs[t, e]))[:k]
        assert set(r.indices[t].tolist()) == set(order)
        ref = probs[t, order] / probs[t, order].sum()
        torch.testing.assert_close(r.weights[t].sort().values, ref.sort().values)


@settings(max_examples=10, deadline=None)
@given(tokens=st.integers(2, 40), experts=st.integers(2, 8), cf=st.floats(0.5, 3.0), seed=st.integers(0, 999))
def test_expert_choice_matches_per_expert_reference_and_budget(tokens, experts, cf, seed):
    torch.manual_seed(seed)
    router = make_router("expert_choice", 5, experts, top_k=2, capacity_factor=cf)
    x = torch.randn(tokens, 5)
    valid = torch.rand(tokens) > 0.25
    r = router(x, valid=valid)
    n_valid = int(valid.sum())
    cap = router.capacity(n_valid) if n_valid else 0
    probs = torch.softmax(x @ router.gate.weight.t(), -1)
    counts = torch.bincount(r.indices[r.indices >= 0], minlength=experts)
    assert torch.all(counts == cap)  # every expert fills exactly its capacity
    for e in range(experts):
        chosen = set((r.indices == e).any(1).nonzero().flatten().tolist())
        assert all(bool(valid[t]) for t in chosen)
        worst_in = min((float(probs[t, e]) for t in chosen), default=1.0)
        best_out = max((float(probs[t, e]) for t in range(tokens) if valid[t] and t not in chosen), default=0.0)
        assert worst_in >= best_out
        for t in chosen:
            j = (r.indices[t] == e).nonzero()[0, 0]
            torch.testing.assert_close(r.weights[t, j], probs[t, e])


def test_dtop_p_selects_a_probability_prefix():
    torch.manual_seed(0)
    router = make_router("dtop_p", 8, 8, top_k=2).eval()
    r = router(torch.randn(50, 8))
    p = router.threshold
    for t in range(50):
        e = r.indices[t][r.indices[t] >= 0]
        probs = r.probs[t]
        assert (
            torch.all(probs[e].min() >= probs[[i for i in range(8) if i not in e.tolist()]].max())
            if e.numel() < 8
            else True
        )
        mass_before_last = probs[e].sum() - probs[e].min()
        assert mass_before_last < p + 1e-6


@pytest.mark.parametrize("target", [1.5, 5.0])
def test_dtop_p_controller_meets_the_active_expert_budget(target):
    torch.manual_seed(0)
    router = make_router("dtop_p", 16, 16, top_k=2, target_k=target).train()
    x = torch.randn(128, 16)
    first = router(x).stats["mean_active"]
    for _ in range(120):
        r = router(x)
    assert abs(first - target) > 0.3  # the controller had work to do
    assert abs(r.stats["mean_active"] - target) < 0.15
    router.eval()
    assert abs(router(torch.randn(256, 16)).stats["mean_active"] - target) < 0.3


def test_sigmoid_bias_changes_selection_never_weights():
    torch.manual_seed(0)
    router = make_router("sigmoid_bias", 8, 6, top_k=2).eval()
    x = torch.randn(30, 8)
    r0 = router(x)
    router.expert_bias[:] = torch.tensor([5.0, 5.0, 0, 0, 0, 0])
    r1 = router(x)
    assert torch.all(r1.indices.sort(-1).values == torch.tensor([0, 1]))
    scores = torch.sigmoid(x @ router.gate.weight.t())
    picked = scores.gather(1, r1.indices)
    torch.testing.assert_close(r1.weights, picked / picked.sum(-1, keepdim=True))
    torch.testing.assert_close(r1.logits, r0.logits)


def test_sigmoid_bias_update_rule():
    router = make_router("sigmoid_bias", 4, 4, top_k=1, bias_update_rate=0.1, auto_update=False)
    router.update_bias(torch.tensor([10.0, 0.0, 5.0, 5.0]))
    torch.testing.assert_close(router.expert_bias, torch.tensor([-0.1, 0.1, 0.0, 0.0]))
    router.update_bias()  # nothing accumulated: no change (sign(0) = 0, no host-side check needed)
    torch.testing.assert_close(router.expert_bias, torch.tensor([-0.1, 0.1, 0.0, 0.0]))
    router.train()(torch.randn(6, 4))  # auto_update=False: the load waits for update_bias()
    assert router.pending_load.sum() == 6 and torch.equal(router.expert_bias, torch.tensor([-0.1, 0.1, 0.0, 0.0]))
    router.update_bias()
    assert router.pending_load.sum() == 0 and not torch.equal(router.expert_bias, torch.tensor([-0.1, 0.1, 0.0, 0.0]))


def test_bias_balancing_moves_a_skewed_stream_toward_uniform():
    torch.manual_seed(0)
    E = 8
    router = make_router("sigmoid_bias", 16, E, top_k=2, bias_update_rate=0.02).train()
    with torch.no_grad():
        router.gate.weight[0] += 0.5  # expert 0 attracts most tokens
        router.gate.weight[1] += 0.3
    center = torch.randn(16).abs()

    def max_over_mean():
        r = router(torch.randn(512, 16) + center)
        load = torch.bincount(r.indices.flatten(), minlength=E).float()
        return float(load.max() / load.mean())

    router.eval()
    before = max_over_mean()
    router.train()
    for _ in range(150):
        router(torch.randn(256, 16) + center)
    router.eval()
    after = max_over_mean()
    assert before > 2.0 and after < 1.3, (before, after)


def test_noisy_topk_load_estimator_and_eval_determinism():
    torch.manual_seed(0)
    router = make_router("noisy_topk", 8, 6, top_k=2)
    torch.nn.init.normal_(router.gate.weight)
    torch.nn.init.normal_(router.noise.weight, std=0.1)
    x = torch.randn(40, 8)
    r = router.train()(x)
    assert r.load_prob.shape == (40, 6) and torch.all((r.load_prob >= 0) & (r.load_prob <= 1))
    # the selected experts are the likely ones: mean estimator of chosen > of unchosen
    chosen = r.selected().bool()
    assert r.load_prob[chosen].mean() > r.load_prob[~chosen].mean()
    router.eval()
    assert torch.equal(router(x).indices, router(x).indices)


def test_kern_weights_are_l2_normalised_relu_scores():
    torch.manual_seed(0)
    router = make_router("kern", 8, 6, top_k=3)
    x = torch.randn(20, 8)
    r = router(x)
    s = torch.relu(x @ router.gate.weight.t()).gather(1, r.indices)
    nonzero = s.norm(dim=-1) > 0
    torch.testing.assert_close(r.weights.norm(dim=-1)[nonzero], torch.ones(int(nonzero.sum())))
    torch.testing.assert_close(r.weights[nonzero], s[nonzero] / s[nonzero].norm(dim=-1, keepdim=True))


def test_dirichlet_selection_and_sparsity_penalty():
    torch.manual_seed(0)
    router = make_router("dirichlet", 8, 6, top_k=2)
    x = torch.randn(32, 8)
    r = router.train()(x)
    assert torch.all((r.indices >= 0).sum(-1) >= 1)
    torch.testing.assert_close(r.weights.sum(-1), torch.ones(32))  # weights over the selected set
    (r.weights.sum() + r.aux["sparsity"] + r.aux["dirichlet_kl"]).backward()
    assert router.gate.weight.grad.abs().sum() > 0 and router.concentration.weight.grad.abs().sum() > 0
    # the sparsity penalty drives the expected number of active experts to the target
    opt = torch.optim.Adam(router.parameters(), lr=0.05)
    for _ in range(60):
        opt.zero_grad()
        router(x).aux["sparsity"].backward()
        opt.step()
    with torch.no_grad():
        assert abs(float(torch.sigmoid(x @ router.gate.weight.t()).sum(-1).mean()) - 2.0) < 0.15


def test_grouped_router_groups():
    torch.manual_seed(0)
    router = make_router("grouped", 8, 7, top_k=2, condition_dim=3, num_tasks=3, experts_per_task=1, num_shared_group=1)
    task = torch.tensor([0, 1, 2, 1])
    r = router(torch.randn(4, 8), condition=torch.nn.functional.one_hot(task, 3).float())
    assert torch.all(r.indices[:, 0] == 0)  # shared expert always on
    assert torch.equal(r.indices[:, 1], 1 + task)  # the task's own expert, only for that task
    assert torch.all(r.indices[:, 2:] >= 4)  # dynamic top-k among the rest
    torch.testing.assert_close(r.weights[:, 2:].sum(-1), torch.ones(4))


def test_condition_joins_router_input_and_broadcasts():
    torch.manual_seed(0)
    layer = MoE(8, 12, 6, top_k=2, condition_dim=3)
    assert layer.router.gate.weight.shape == (6, 11)
    x, c = torch.randn(2, 5, 8), torch.randn(2, 3)
    y, routing = layer(x, condition=c)
    torch.testing.assert_close(y, layer(x, condition=c[:, None].expand(2, 5, 3)).output)
    assert not torch.allclose(routing.logits, layer(x, condition=-c).routing.logits)


def test_require_router_names_the_mixture_and_the_routers_that_apply():
    from zoo.moe import CAPABILITIES, Router, require_router, routers_that_apply

    assert require_router("topk", "a per-sequence gate") is ROUTERS["topk"]
    with pytest.raises(ConfigError) as err:
        require_router("expert_choice", "SEER's per-series gate", needs=("per_token_choice",))
    msg = str(err.value)
    assert msg.startswith("router 'expert_choice' cannot route SEER's per-series gate: ")
    assert "routers that apply: " + ", ".join(routers_that_apply(["per_token_choice"])) in msg
    assert "expert_choice" not in routers_that_apply(["per_token_choice"]) and "topk" in routers_that_apply()
    assert set(routers_that_apply(["fixed_k", "sparse"])) == set(ROUTERS) - {
        "expert_choice",
        "dtop_p",
        "dirichlet",
        "soft",
    }
    with pytest.raises(ConfigError, match="valid: dirichlet"):
        require_router("nope", "x")
    with pytest.raises(ValueError, match="unknown router capability"):
        require_router("topk", "x", needs=("causal",))
    assert all(isinstance(getattr(Router, c), bool) for c in CAPABILITIES)
    # make_router checks the same when asked
    with pytest.raises(ConfigError, match="cannot route the RL policy gate"):
        make_router("expert_choice", 4, 3, mixture="the RL policy gate", needs=["per_token_choice"])
    assert make_router("soft", 4, 3, mixture="x", needs=["per_token_choice"]).num_experts == 3


def test_expert_choice_really_depends_on_the_batch():
    """Why it lacks per_token_choice: a token's experts change when other tokens change; top-k's never do."""
    torch.manual_seed(0)
    x = torch.randn(16, 6)
    for name, independent in [("topk", True), ("expert_choice", False)]:
        router = make_router(name, 6, 4, top_k=1)
        a, b = router(x[:1]).indices[0], router(x).indices[0]  # alone vs among 15 others
        same = set(a[a >= 0].tolist()) == set(b[b >= 0].tolist())
        assert same if independent else not same, name
        assert ROUTERS[name].per_token_choice is independent


def test_unknown_router_kwargs_are_a_config_error_listing_the_accepted_ones():
    with pytest.raises(ConfigError, match="router 'topk' takes no \\['noise_eps'\\]; it takes: normalize"):
        make_router("topk", 4, 3, noise_eps=0.1)
    with pytest.raises(ConfigError, match="bias_update_rate"):
        MoE(8, 16, 4, router="sigmoid_bias", router_kwargs={"rate": 1.0})


def test_convex_weights_is_declared_by_what_each_router_does():
    """A router declares ``convex_weights`` exactly when its default weights sum to 1 per token: a mixture that
    blends images (MoE-GS) lists, as routers that apply, only those whose weights are a convex combination."""
    from zoo.moe import routers_that_apply

    torch.manual_seed(0)
    x = torch.randn(256, 8)
    for name, cls in ROUTERS.items():
        router = make_router(name, 8, 6, top_k=2).eval()
        with torch.no_grad():
            routing = router(x)
        sums = torch.where(routing.indices >= 0, routing.weights, 0.0).sum(-1)
        convex = torch.allclose(sums, torch.ones_like(sums), atol=1e-4)
        assert cls.convex_weights is convex, name
    blend = routers_that_apply(["per_token_choice", "convex_weights"])
    assert "kern" not in blend and "expert_choice" not in blend and "topk" in blend
    with pytest.raises(ConfigError, match="must sum to 1.*routers that apply: dirichlet, dtop_p, grouped, noisy_topk"):
        make_router("kern", 8, 6, mixture="an image blend", needs=["per_token_choice", "convex_weights"])
