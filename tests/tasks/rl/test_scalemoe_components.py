"""ScaleMoE building blocks: DMC wrapper, replay buffer, SimBa experts, gating, log-probs."""

import math

import numpy as np
import pytest
import torch

from zoo.errors import ConfigError
from zoo_tasks.rl.envs import make_env
from zoo_tasks.rl.networks import MoEActor, MoECritic, make_actor, make_critic, moe_active_params
from zoo_tasks.rl.replay import ReplayBuffer
from zoo_tasks.rl.sac import tanh_normal_sample
from zoo_tasks.rl.simba import SimbaEncoder, StackedSimba, simba_encoder_params


@pytest.fixture(autouse=True)
def _one_thread():
    """Tiny networks: intra-op threads only add contention on a shared CPU."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def test_dmc_env_flattens_observations_and_repeats_actions():
    env = make_env("cartpole-swingup", seed=0, action_repeat=2)
    obs, _ = env.reset()
    assert obs.shape == env.observation_space.shape == (5,) and obs.dtype == np.float32
    assert env.action_space.shape == (1,)
    steps, total = 0, 0.0
    while True:
        obs, reward, terminated, truncated, _ = env.step(env.action_space.sample())
        steps, total = steps + 1, total + reward
        assert 0.0 <= reward <= 2.0  # two control steps, each rewarded in [0, 1]
        if terminated or truncated:
            break
    assert (steps, terminated, truncated) == (500, False, True)  # 1000 control steps, a time limit
    assert 0.0 < total < 1000.0


def test_dmc_env_reset_with_seed_is_reproducible():
    env = make_env("reacher-easy", seed=3)
    first, _ = env.reset(seed=7)
    second, _ = env.reset(seed=7)
    np.testing.assert_array_equal(first, second)


def test_unknown_names_give_clear_errors():
    with pytest.raises(ConfigError, match="cartpole-swingup"):
        make_env("cartpole-swingupp")
    with pytest.raises(ConfigError, match="valid: mlp, simba"):
        make_actor("transformer", 5, 1, 32, 1)
    with pytest.raises(ConfigError, match="gating"):
        MoEActor(5, 1, 16, 1, num_experts=4, top_k=2, gating="token")
    with pytest.raises(ConfigError, match="top_k"):
        MoECritic(5, 1, 16, 1, num_experts=4, top_k=5, gating="output")


def test_replay_buffer_wraps_at_capacity_and_samples_batches():
    buf = ReplayBuffer(capacity=5, obs_dim=3, act_dim=2)
    for i in range(8):
        buf.add(np.full(3, i), np.full(2, -i), float(i), np.full(3, i + 1), terminated=(i == 7))
    assert len(buf) == 5 and buf.ptr == 3
    assert sorted(buf.reward.tolist()) == [3.0, 4.0, 5.0, 6.0, 7.0]  # the 3 oldest were overwritten
    assert buf.obs[0].tolist() == [5.0, 5.0, 5.0]  # slot 0 now holds transition 5
    batch = buf.sample(16)
    assert batch.obs.shape == (16, 3) and batch.action.shape == (16, 2) and batch.next_obs.shape == (16, 3)
    assert batch.reward.shape == batch.terminated.shape == (16,)
    torch.testing.assert_close(batch.next_obs, batch.obs + 1)  # fields of one transition stay together
    torch.testing.assert_close(batch.action[:, 0], -batch.obs[:, 0])
    assert set(batch.reward.tolist()) <= {3.0, 4.0, 5.0, 6.0, 7.0}
    assert batch.terminated[batch.reward == 7.0].eq(1).all() and batch.terminated[batch.reward != 7.0].eq(0).all()


def test_stacked_simba_experts_equal_independent_simba_encoders():
    """Reference check: expert e of StackedSimba computes exactly a SimbaEncoder holding expert e's weights."""
    torch.manual_seed(0)
    E, d, h, blocks = 3, 6, 8, 2
    stacked = StackedSimba(E, d, h, blocks)
    with torch.no_grad():  # make LayerNorm affines non-trivial so the per-expert gather is exercised
        for p in [*stacked.ln_w, *stacked.ln_b]:
            p.normal_()
    x = torch.randn(10, d)
    dense_out = stacked.forward_dense(x)  # (T, E, h)
    for e in range(E):
        enc = SimbaEncoder(d, h, blocks)
        with torch.no_grad():
            enc.embed.weight.copy_(stacked.embed_w[e].t())
            enc.embed.bias.copy_(stacked.embed_b[e])
            for i, block in enumerate(enc.blocks):
                block.norm.weight.copy_(stacked.ln_w[i][e])
                block.norm.bias.copy_(stacked.ln_b[i][e])
                block.fc1.weight.copy_(stacked.w1[i][e].t())
                block.fc1.bias.copy_(stacked.b1[i][e])
                block.fc2.weight.copy_(stacked.w2[i][e].t())
                block.fc2.bias.copy_(stacked.b2[i][e])
            enc.norm.weight.copy_(stacked.ln_w[blocks][e])
            enc.norm.bias.copy_(stacked.ln_b[blocks][e])
        torch.testing.assert_close(dense_out[:, e], enc(x), rtol=1e-5, atol=1e-5)
    assert simba_encoder_params(d, h, blocks) == sum(p.numel() for p in enc.parameters())


@pytest.mark.parametrize("gating", ["output", "feature"])
def test_moe_actor_gating_shapes_and_mixture(gating):
    torch.manual_seed(0)
    B, obs_dim, A, E, K = 32, 5, 2, 4, 2
    actor = MoEActor(obs_dim, A, hidden=16, num_blocks=1, num_experts=E, top_k=K, gating=gating)
    obs = torch.randn(B, obs_dim)
    mean, log_std = actor(obs)
    routing = actor.last_routing
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
    q = critic(obs, act)
    assert q.shape == (B,)
    routing = critic.last_routing
    assert routing.indices.shape == (B, K)
    torch.testing.assert_close(critic(obs, -act) * 0, q * 0)  # different actions, same routing (gate reads s)
    assert torch.equal(critic.last_routing.indices, routing.indices)
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


def test_tanh_normal_log_prob_matches_torch_distributions():
    torch.manual_seed(0)
    mean, log_std = torch.randn(64, 3), torch.randn(64, 3).clamp(-2, 1)
    action, log_prob = tanh_normal_sample(mean, log_std)
    assert action.abs().max() < 1
    dist = torch.distributions.TransformedDistribution(
        torch.distributions.Normal(mean, log_std.exp()), [torch.distributions.TanhTransform(cache_size=1)]
    )
    u = torch.atanh(action.clamp(-1 + 1e-6, 1 - 1e-6))
    expect = (torch.distributions.Normal(mean, log_std.exp()).log_prob(u) - torch.log1p(-action.square())).sum(-1)
    keep = action.abs().max(-1).values < 0.999  # atanh is ill-conditioned at the boundary
    torch.testing.assert_close(log_prob[keep], expect[keep], rtol=1e-3, atol=1e-3)
    assert math.isfinite(float(dist.log_prob(action.clamp(-0.999, 0.999)).sum()))
