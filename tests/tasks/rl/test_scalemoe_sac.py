"""ScaleMoE SAC agent: each update step changes exactly the parameters it should; a short real Lightning fit."""

import glob
import math
import os

import pytest
import pytorch_lightning as pl
import torch
from pytorch_lightning.callbacks import ModelCheckpoint

from zoo.callbacks.routing_stats import RoutingStatsCallback
from zoo.errors import ConfigError
from zoo.moe.testing import check_router_step
from zoo_tasks.rl.data import DMControlDataModule
from zoo_tasks.rl.replay import Batch
from zoo_tasks.rl.sac import SACAgent, sac_update, tanh_normal_sample

TINY = dict(actor_hidden=16, critic_hidden=16, critic_blocks=1, num_experts=4, top_k=2, batch_size=32)


def _fit(tmp_path, env_steps, learning_starts, architecture="scalemoe-output", eval_every=0, callbacks=(), **kwargs):
    pl.seed_everything(0)
    agent = SACAgent(architecture=architecture, learning_starts=learning_starts, log_every=10, **TINY, **kwargs)
    data = DMControlDataModule("cartpole-swingup", env_steps=env_steps, eval_every=eval_every, eval_episodes=1)
    trainer = pl.Trainer(
        max_epochs=1,
        default_root_dir=str(tmp_path),
        enable_progress_bar=False,
        enable_model_summary=False,
        enable_checkpointing=False,
        callbacks=list(callbacks),
    )
    trainer.fit(agent, data)
    return agent, data, trainer


@pytest.fixture(scope="module")
def idle_agent(tmp_path_factory):
    """An agent after 60 random steps and no update (learning_starts not reached): optimisers exist, weights fresh."""
    agent, _, _ = _fit(tmp_path_factory.mktemp("idle"), env_steps=120, learning_starts=1000, num_q=2)
    assert agent._timing["updates"] == 0 and len(agent.buffer) == 60
    return agent


def _snapshot(net):
    return [p.detach().clone() for p in _params(net)]


def _changed(module, before):
    return [not torch.equal(p, b) for p, b in zip(module.parameters(), before)]


def _params(net):
    return [net] if isinstance(net, torch.Tensor) else list(net.parameters())


def test_one_update_steps_actor_then_temperature_then_critic_then_target(idle_agent, monkeypatch):
    agent = idle_agent
    nets = {"actor": agent.actor, "temperature": agent.log_alpha, "critic": agent.critic}
    before = {name: _snapshot(net) for name, net in nets.items()} | {"target": _snapshot(agent.target_critic)}
    alpha = agent.log_alpha.detach().clone()
    steps = []  # at each optimiser step: its name, which networks hold a gradient, the weights before it
    for name, opt in zip(("actor", "critic", "temperature"), agent.optimizers()):

        def recording_step(*args, name=name, step=opt.step, **kwargs):
            grads = {net: any(p.grad is not None for p in _params(m)) for net, m in nets.items()}
            steps.append((name, grads, {net: _snapshot(m) for net, m in nets.items()}))
            return step(*args, **kwargs)

        monkeypatch.setattr(opt, "step", recording_step)
    agent.critic.zero_grad(set_to_none=True)
    losses, routing = agent.update(agent.buffer.sample(32))

    assert [name for name, _, _ in steps] == ["actor", "temperature", "critic"]
    assert not steps[0][1]["critic"]  # the critic was frozen in the actor loss
    assert steps[2][1]["critic"]
    after = {name: _snapshot(net) for name, net in nets.items()}
    weights = [snapshot for _, _, snapshot in steps] + [after]
    for (name, _, _), old, new in zip(steps, weights, weights[1:]):  # each step moves its network and no other
        for net in nets:
            moved = [not torch.equal(a, b) for a, b in zip(new[net], old[net])]
            assert all(moved) if net == name else not any(moved), (name, net)
    assert all(_changed(agent.actor, before["actor"])) and all(_changed(agent.critic, before["critic"]))
    # temperature moves against the entropy gap: up when the policy is less random than the target entropy
    direction = math.copysign(1.0, agent.target_entropy - float(losses["entropy"]))
    assert (agent.log_alpha.detach() - alpha).item() * direction > 0
    tau = agent.hparams.tau  # the target critic moves by tau towards the updated critic
    for new, old, online in zip(agent.target_critic.parameters(), before["target"], agent.critic.parameters()):
        torch.testing.assert_close(new, (1 - tau) * old + tau * online)

    assert list(routing) == ["actor", "critic.0", "critic.1"] == ["actor", *agent.critic_names()]
    assert routing["actor"].num_tokens == 32
    assert float(losses["actor_aux"]) > 0  # the gate's load-balance loss is part of the actor loss
    # each critic's gate adds its own aux loss (L_Q sums over the critics)
    expect = sum(0.01 * float(routing[c].aux["load_balance"]) for c in agent.critic_names())
    assert float(losses["critic_aux"]) == pytest.approx(expect, rel=1e-6) and expect > 0


def test_loss_and_routing_steps_nothing(idle_agent):
    agent = idle_agent
    weights = _snapshot(agent)
    loss, routing = agent.loss_and_routing(agent.buffer.sample(32))
    assert not any(_changed(agent, weights)) and list(routing) == ["actor", "critic.0", "critic.1"]
    check_router_step(agent, loss, routing)


def test_agent_needs_the_dmc_datamodule():
    class Other(pl.LightningDataModule):
        def train_dataloader(self):
            return torch.utils.data.DataLoader(range(3), batch_size=None)

    trainer = pl.Trainer(max_epochs=1, logger=False, enable_checkpointing=False, enable_progress_bar=False)
    with pytest.raises(ConfigError, match="DMControlDataModule"):
        trainer.fit(SACAgent(**TINY), Other())
    with pytest.raises(ConfigError, match="architecture"):
        SACAgent(architecture="moe")
    with pytest.raises(ConfigError, match="checkpoint_every_s"):
        SACAgent(checkpoint_every_s=-1)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(router="topp"), r"unknown router 'topp'; valid: .*topk"),
        (dict(router="expert_choice"), r"router 'expert_choice' cannot route ScaleMoE's per-state gate.*topk"),
        (dict(top_k=9), r"top_k must be in \[1, num_experts=8\]"),
        (dict(num_experts=0, top_k=0), "num_experts must be >= 1"),
        (dict(aux_weights={"load_balence": 0.01}), r"aux_weights: unknown aux loss \['load_balence'\].*load_balance"),
        (dict(batch_size=0), "batch_size must be >= 1"),
        (dict(buffer_capacity=0), "buffer_capacity must be >= 1"),
        (dict(num_q=0), "num_q must be >= 1"),
    ],
)
def test_bad_agent_settings_fail_when_the_config_is_read(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        SACAgent(architecture="scalemoe-output", **kwargs)


def test_router_kwargs_reach_both_gates_and_unknown_ones_are_named():
    agent = SACAgent(architecture="scalemoe-feature", router="noisy_topk", router_kwargs={"noise_eps": 0.5}, **TINY)
    agent.build(obs_dim=5, act_dim=1)
    gates = [agent.actor.router, *(c.router for c in agent.critic.critics)]
    assert [type(g).__name__ for g in gates] == ["NoisyTopKRouter", "NoisyTopKRouter"]
    assert all(g.noise_eps == 0.5 for g in gates)
    agent = SACAgent(architecture="scalemoe-feature", router_kwargs={"noise_eps": 0.5}, **TINY)
    with pytest.raises(ConfigError, match=r"router_kwargs: router 'topk' takes no \['noise_eps'\]"):
        agent.build(obs_dim=5, act_dim=1)


@pytest.mark.slow(reason="a Lightning fit of SAC in a real dm_control environment")
def test_lightning_fit_runs_the_environment_updates_and_evaluates(tmp_path):
    architecture = "scalemoe-feature"
    stats = RoutingStatsCallback(heatmaps=False)
    agent, data, trainer = _fit(
        tmp_path, env_steps=400, learning_starts=50, architecture=architecture, eval_every=200, callbacks=[stats]
    )
    assert int(agent.agent_steps) == 200 and agent.env_steps() == 400
    assert agent._timing["updates"] == (200 - 50 + 1) * 2  # UTD 2 from the step the buffer holds 50
    assert [s for s, _ in agent.eval_history] == [200, 400]  # val/return at fixed intervals
    assert all(0 <= r <= 1000 for _, r in agent.eval_history)
    assert agent.obs_norm.count > 199  # statistics saw every observed state
    metrics = trainer.test(agent, data, verbose=False)[0]
    assert 0 <= metrics["test/return"] <= 1000
    assert os.path.exists(os.path.join(trainer.log_dir, "returns.png"))
    assert glob.glob(os.path.join(trainer.log_dir, "events.out.tfevents.*"))
    extra = agent.extra_results()
    assert extra["updates_per_s"] > 0 and extra["env_steps_per_s"] > 0
    for net in ("actor", "critic"):
        routing = extra["routing"][net]
        assert len(routing["load"]) == 4 and abs(sum(routing["training_load"]) - 1) < 1e-5
        assert 0 <= routing["load_entropy"] <= 1
        # every update's gate joined the training summary; each training step handed its last one to the callback
        assert agent.train_routing.layers[net].tokens == agent._timing["updates"] * 32
        assert stats.summary_dict()["train"][net]["tokens"] == (200 - 50 + 1) * 32
    state = agent.state_dict()
    torch.save(state, tmp_path / "w.pt")
    assert torch.load(tmp_path / "w.pt", weights_only=True).keys() == state.keys()
    assert "obs_norm.mean" in state and "agent_steps" in state


class _Killed(Exception):
    pass


class _KillAtStep(pl.Callback):
    def __init__(self, step: int):
        self.step = step

    def on_train_batch_end(self, trainer, agent, *args):
        if int(agent.agent_steps) == self.step:
            raise _Killed


def _resumable_fit(tmp_path, kill_at=None, ckpt_path=None):
    pl.seed_everything(0)
    # save after every step
    agent = SACAgent("scalemoe-output", learning_starts=40, log_every=10, checkpoint_every_s=1e-9, **TINY)
    data = DMControlDataModule("cartpole-swingup", env_steps=240, eval_every=80, eval_episodes=1)
    callbacks = [ModelCheckpoint(dirpath=tmp_path / "checkpoints", save_last=True)]
    trainer = pl.Trainer(
        max_epochs=1,
        default_root_dir=str(tmp_path),
        callbacks=callbacks + ([_KillAtStep(kill_at)] if kill_at else []),
        enable_progress_bar=False,
        enable_model_summary=False,
        logger=False,
    )
    try:
        trainer.fit(agent, data, ckpt_path=ckpt_path, weights_only=True)
    except _Killed:
        pass
    return agent


@pytest.mark.slow(reason="two SAC fits in a real dm_control environment, one killed and resumed")
def test_killed_run_resumes_with_its_replay_buffer_and_step_counter(tmp_path):
    killed = _resumable_fit(tmp_path, kill_at=70)
    last = tmp_path / "checkpoints" / "last.ckpt"
    assert not list((tmp_path / "checkpoints").glob("*.partial"))  # the timed save renames into place
    saved = torch.load(last, weights_only=True)
    steps = int(saved["state_dict"]["agent_steps"])
    assert 60 <= steps <= 70 and saved["replay_buffer"]["size"] == steps
    assert [s for s, _ in saved["sac_progress"]["eval_history"]] == [80]  # the curve so far is kept
    updates_before = saved["sac_progress"]["timing"]["updates"]
    assert updates_before == (steps - 40 + 1) * 2
    assert saved["sac_progress"]["train_routing"]["actor"]["tokens"] == updates_before * 32  # routing summary too
    torch.testing.assert_close(saved["replay_buffer"]["obs"], killed.buffer.obs[:steps])

    resumed = _resumable_fit(tmp_path, ckpt_path=str(last))
    assert int(resumed.agent_steps) == 120 and len(resumed.buffer) == 120  # budget by step counter, not batch
    torch.testing.assert_close(resumed.buffer.obs[:steps], saved["replay_buffer"]["obs"])
    # updates continue at once (the restored buffer already holds learning_starts transitions)
    assert resumed._timing["updates"] == updates_before + (120 - steps) * 2
    assert [s for s, _ in resumed.eval_history] == [80, 160, 240]
    assert resumed._timing["fit_env_steps"] == 240  # speed is measured over the whole run, both processes
    assert resumed.train_routing.layers["critic"].tokens == resumed._timing["updates"] * 32


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


def test_acting_is_not_a_training_forward_and_the_target_copies_the_balancing_bias(monkeypatch):
    torch.manual_seed(0)  # a batch whose load is not perfectly balanced (that one would leave the bias alone)
    agent = SACAgent(architecture="scalemoe-output", router="sigmoid_bias", **TINY)
    agent.build(obs_dim=5, act_dim=1)
    agent.train()
    gate = agent.actor.router
    bias = gate.expert_bias.clone()
    agent.act(torch.randn(5).numpy(), deterministic=False)
    assert torch.equal(gate.expert_bias, bias) and gate.training  # no bias step from one acting state
    agent.actor(torch.randn(32, 5))  # a training forward of a batch moves the bias
    assert not torch.equal(gate.expert_bias, bias)
    critic_gate = agent.critic.critics[0].router
    with torch.no_grad():
        critic_gate.expert_bias.add_(0.5)
    monkeypatch.setattr(agent, "manual_backward", lambda loss: loss.backward())  # no trainer here
    obs = torch.randn(2, 32, 5)
    batch = Batch(obs[0], torch.rand(32, 1), torch.rand(32), obs[1], torch.zeros(32))
    sac_update(agent, batch, agent.configure_optimizers())
    assert torch.equal(agent.target_critic.critics[0].router.expert_bias, critic_gate.expert_bias)
