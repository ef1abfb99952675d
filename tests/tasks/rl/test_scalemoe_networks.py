"""zoo_tasks.rl.networks: ScaleMoE actor and critic (output- and feature-level gating) equal their dense reference
mixtures, the gate reads the state only, experts are sized to the dense twin, and bad settings raise ConfigError."""

import pytest
import torch

from zoo.errors import ConfigError
from zoo_tasks.rl.networks import MoEActor, MoECritic, make_actor, make_critic, moe_active_params


def test_unknown_names_give_clear_errors():
    with pytest.raises(ConfigError, match="valid: mlp, simba"):
        make_actor("transformer", 5, 1, 32, 1)
    with pytest.raises(ConfigError, match="gating"):
        MoEActor(5, 1, 16, 1, num_experts=4, top_k=2, gating="token")
    with pytest.raises(ConfigError, match="top_k"):
        MoECritic(5, 1, 16, 1, num_experts=4, top_k=5, gating="output")
    with pytest.raises(ConfigError, match=r"unknown router 'topkk'; valid: .*topk"):
        MoEActor(5, 1, 16, 1, num_experts=4, top_k=2, gating="output", router="topkk")
    with pytest.raises(ConfigError, match=r"'expert_choice' cannot route ScaleMoE's per-state gate.*noisy_topk"):
        MoECritic(5, 1, 16, 1, num_experts=4, top_k=2, gating="feature", router="expert_choice")


@pytest.mark.parametrize("gating", ["output", "feature"])
def test_moe_actor_gating_shapes_and_mixture(gating):
    torch.manual_seed(0)
    B, obs_dim, A, E, K = 32, 5, 2, 4, 2
    actor = MoEActor(obs_dim, A, hidden=16, num_blocks=1, num_experts=E, top_k=K, gating=gating)
    obs = torch.randn(B, obs_dim)
    mean, log_std, routing = actor(obs)
    assert mean.shape == log_std.shape == (B, A)
    assert routing.indices.shape == routing.weights.shape == (B, K) and routing.logits.shape == (B, E)
    torch.testing.assert_close(routing.weights.sum(-1), torch.ones(B))
    assert (log_std >= -10).all() and (log_std <= 2).all()
    # reference: every expert on every state, then mix the K chosen ones by the gate weights
    if gating == "output":
        per_expert = actor.experts.nets.forward_dense(obs)  # (B, E, 2A) before the log-std squash
        means, raw = per_expert.split(A, dim=-1)
        from zoo_tasks.rl.networks import squash_log_std

        stds = squash_log_std(raw)
    else:
        feats = actor.experts.forward_dense(obs)  # (B, E, h)
    w = routing.dense_weights()  # (B, E), zero outside the top-K
    assert (w > 0).sum(-1).eq(K).all()
    if gating == "output":
        torch.testing.assert_close(mean, torch.einsum("be,bea->ba", w, means), rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(log_std, torch.einsum("be,bea->ba", w, stds), rtol=1e-5, atol=1e-5)
    else:
        expect_mean, _ = actor.head(torch.einsum("be,beh->bh", w, feats)).split(A, dim=-1)
        torch.testing.assert_close(mean, expect_mean, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("gating", ["output", "feature"])
def test_moe_critic_gates_on_state_and_mixes_q(gating):
    torch.manual_seed(0)
    B, obs_dim, A, E, K = 16, 5, 2, 4, 2
    critic = MoECritic(obs_dim, A, hidden=16, num_blocks=2, num_experts=E, top_k=K, gating=gating)
    obs, act = torch.randn(B, obs_dim), torch.rand(B, A) * 2 - 1
    q, routing = critic(obs, act)
    assert q.shape == (B,)
    assert routing.indices.shape == (B, K)
    q_other, routing_other = critic(obs, -act)  # other actions: other Q-values, same routing (the gate reads s)
    assert not torch.allclose(q_other, q)
    assert torch.equal(routing_other.indices, routing.indices) and torch.equal(routing_other.weights, routing.weights)
    w = routing.dense_weights()
    per_expert = critic.experts.forward_dense(torch.cat([obs, act], -1))
    expect = (
        torch.einsum("be,be->b", w, per_expert.squeeze(-1))
        if gating == "output"
        else critic.head(torch.einsum("be,beh->bh", w, per_expert)).squeeze(-1)
    )
    torch.testing.assert_close(q, expect, rtol=1e-5, atol=1e-5)
    q.sum().backward()  # gradients reach the gate through the mixture weights
    assert critic.router.gate.weight.grad is not None and critic.router.gate.weight.grad.abs().sum() > 0


@pytest.mark.parametrize("arch", ["scalemoe-output", "scalemoe-feature"])
def test_moe_experts_are_sized_to_the_dense_twins_active_parameters(arch):
    obs_dim, A, E, K, gating = 24, 6, 8, 2, arch.removeprefix("scalemoe-")
    nets = {
        "actor": (make_actor("simba", obs_dim, A, 64, 1), make_actor(arch, obs_dim, A, 64, 1, E, K), obs_dim, 2 * A, 1),
        "critic": (
            make_critic("simba", obs_dim, A, 96, 2).critics[0],
            make_critic(arch, obs_dim, A, 96, 2, num_experts=E, top_k=K).critics[0],
            obs_dim + A,
            1,
            2,
        ),
    }
    for dense, moe, in_dim, out_dim, blocks in nets.values():
        width = moe.expert_hidden
        active = moe_active_params(in_dim, out_dim, width, blocks, K, gating, obs_dim, E)
        total = sum(p.numel() for p in moe.parameters())
        experts_total = sum(p.numel() for p in moe.experts.parameters())
        assert active == total - experts_total + experts_total * K // E  # the formula counts the real module
        dense_params = sum(p.numel() for p in dense.parameters())
        assert width < 96 and abs(active - dense_params) / dense_params < 0.03
