"""SPHERE's PPO agent: GAE against its slow definition, the actor's step with the penalty's gradient at the
configured ratio, the learning rate over a task's schedule, a real fit through a two-task sequence (success matrix,
r_e(K), routing by task), and a killed run resuming in the same task at the same step."""

from types import SimpleNamespace

import numpy as np
import pytest
import pytorch_lightning as pl
import torch
from pytorch_lightning.callbacks import ModelCheckpoint

from zoo.errors import ConfigError
from zoo_tasks.rl.continual import ppo
from zoo_tasks.rl.continual.data import MetaWorldSequenceDataModule
from zoo_tasks.rl.continual.ppo import ContinualPPO, TaskEnvs, gae, linear_lr, ppo_iteration
from zoo_tasks.rl.continual.sphere import grad_norm

TINY = dict(width=16, depth=1, num_experts=4, top_k=2, n_epochs=2, batch_size=16, ntk_probe=4)
TASKS = ["handle-press-side", "window-close"]


def _data(**kwargs):
    return MetaWorldSequenceDataModule(
        tasks=TASKS, steps_per_task=96, num_envs=2, n_steps=16, eval_episodes=1, eval_envs=1, **kwargs
    )


def slow_gae(rewards, values, starts, next_value, next_start, gamma, lam):
    """A_t = sum_l (gamma lam)^l delta_{t+l}, summed until the episode ends, one copy at a time."""
    n, envs = rewards.shape
    out = torch.zeros(n, envs)
    for e in range(envs):
        v = torch.cat([values[:, e], next_value[e : e + 1]])
        start = torch.cat([starts[:, e], next_start[e : e + 1]])
        for t in range(n):
            total, discount = 0.0, 1.0
            for u in range(t, n):
                cont = 1.0 - float(start[u + 1])
                delta = float(rewards[u, e]) + gamma * float(v[u + 1]) * cont - float(v[u])
                total += discount * delta
                if cont == 0.0:
                    break
                discount *= gamma * lam
            out[t, e] = total
    return out


def test_gae_matches_its_definition_across_episode_starts():
    g = torch.Generator().manual_seed(0)
    rewards, values = torch.randn(6, 3, generator=g), torch.randn(6, 3, generator=g)
    starts = torch.tensor([[1, 0, 0], [0, 0, 1], [0, 1, 0], [0, 0, 0], [1, 0, 0], [0, 0, 1]], dtype=torch.float32)
    next_value, next_start = torch.randn(3, generator=g), torch.tensor([0.0, 1.0, 0.0])
    fast = gae(rewards, values, starts, next_value, next_start, 0.9, 0.8)
    torch.testing.assert_close(fast, slow_gae(rewards, values, starts, next_value, next_start, 0.9, 0.8))


class _StubEnvs:
    """Two copies of a 6-d observation, 2-d action env whose episodes never end (no MetaWorld needed)."""

    def __init__(self):
        self.rng = np.random.default_rng(0)

    def step(self, action):
        never = np.zeros(2, dtype=bool)
        return self.rng.normal(size=(2, 6)), -np.square(action).sum(-1), never, never, {}


def _stub_agent(steps_per_task: int = 96, **kwargs) -> tuple[ContinualPPO, TaskEnvs, list]:
    """An agent on ``_StubEnvs`` (rollouts of 2 x 16 steps), its optimisers, for ``ppo_iteration`` without a trainer."""
    torch.manual_seed(0)
    agent = ContinualPPO(actor="moe", **TINY | kwargs)
    agent.build(6, 2)
    agent.dm = SimpleNamespace(tasks=["stub"], num_envs=2, n_steps=16, steps_per_task=steps_per_task)
    envs = _StubEnvs()
    return agent, TaskEnvs(envs, 0, envs.rng.normal(size=(2, 6))), agent.configure_optimizers()


def _iteration(agent: ContinualPPO, train: TaskEnvs, optimizers: list) -> dict:
    timing = dict.fromkeys(("rollout_s", "rollout_cpu_s", "update_s", "update_cpu_s"), 0.0)
    metrics, obs, _ = ppo_iteration(agent, train, optimizers, timing)
    assert obs.shape == (32, 6) and all(v >= 0 for v in timing.values())
    agent.current_lr = metrics["lr"]
    agent.task_steps += 32
    return metrics


def test_the_actor_steps_on_the_policy_gradient_plus_the_penalty_gradient_at_the_configured_ratio(monkeypatch):
    agent, train, optimizers = _stub_agent(penalty="sphere", penalty_ratio=0.05, max_grad_norm=1e9)  # no clipping
    sums, stepped, scaled_sum = [], [], ppo.scaled_sum

    def recorded_sum(base, extra, ratio):
        sums.append((base, scaled_sum(base, extra, ratio), ratio))
        return sums[-1][1]

    monkeypatch.setattr(ppo, "scaled_sum", recorded_sum)
    params = list(agent.actor.parameters())
    optimizers[0].register_step_pre_hook(lambda *_: stepped.append([p.grad for p in params]))
    _iteration(agent, train, optimizers)
    assert len(sums) == len(stepped) == 2 * 2  # 2 epochs x 2 minibatches of 16
    for (base, total, ratio), grads in zip(sums, stepped):
        added = [t - (b if b is not None else 0) for t, b in zip(total, base)]
        assert ratio == 0.05 and float(grad_norm(added)) == pytest.approx(0.05 * float(grad_norm(base)), rel=2e-3)
        assert all(g is t or torch.equal(g, t) for g, t in zip(grads, total))  # the optimiser steps on the sum


def old_scheduled_lr(hp, task_steps: int, steps_per_task: int) -> float:
    """``ContinualPPO._scheduled_lr`` before ``ppo_iteration`` (04de9709), verbatim: the records' schedule."""
    progress = task_steps / steps_per_task
    if progress >= hp.lr_end_fraction:
        return hp.lr_end
    return hp.lr + progress * (hp.lr_end - hp.lr) / hp.lr_end_fraction


def test_the_linear_learning_rate_is_the_records_schedule_bit_for_bit():
    """Without target_kl: every iteration's rate, as before (the re-verification probe trains one rollout per task,
    so it never sees this schedule past its first value). The records' settings over their whole task, then the
    rates ``ppo_iteration`` sets on both optimisers over a short task and at the next task's start."""
    hp = ContinualPPO(target_kl=None).hparams
    steps_per_task, rollout = 196608, 8 * 256
    for task_steps in range(0, steps_per_task, rollout):
        old = old_scheduled_lr(hp, task_steps, steps_per_task)
        assert linear_lr(hp.lr, hp.lr_end, hp.lr_end_fraction, task_steps / steps_per_task) == old
    agent, train, optimizers = _stub_agent(steps_per_task=7 * 32, target_kl=None, n_epochs=1, lr_end_fraction=0.6)
    for i in range(7):
        expected = agent.hparams.lr if i == 0 else old_scheduled_lr(agent.hparams, 32 * i, 7 * 32)
        assert _iteration(agent, train, optimizers)["lr"] == expected
        assert [g["lr"] for opt in optimizers for g in opt.param_groups] == [expected, expected]
    agent.task_steps.zero_()  # the next task starts at the initial rate
    assert _iteration(agent, train, optimizers)["lr"] == agent.hparams.lr


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(actor="moe", penalty="spectral"), "unknown 'spectral'"),
        (dict(actor="dense", penalty="sphere"), "set actor: moe"),
        (dict(actor="mlp"), "unknown actor 'mlp'"),
        (dict(actor="moe", penalty="sphere", penalty_ratio=0.0), "penalty_ratio"),
    ],
)
def test_bad_agent_settings_name_the_key(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        ContinualPPO(**kwargs)


class _Killed(Exception):
    pass


class _KillAt(pl.Callback):
    def __init__(self, task: int, steps: int):
        self.task, self.steps = task, steps

    def on_train_batch_end(self, trainer, agent, outputs, batch, batch_idx):
        if int(agent.task_index) == self.task and int(agent.task_steps) == self.steps:
            raise _Killed


class _FirstPlace(pl.Callback):
    def on_train_batch_start(self, trainer, agent, batch, batch_idx):
        if not hasattr(self, "place"):
            self.place = (int(agent.task_index), int(agent.task_steps))


def _fit(tmp_path, callbacks=(), ckpt_path=None, **kwargs):
    pl.seed_everything(0)
    agent = ContinualPPO(actor="moe", penalty="sphere", checkpoint_every_s=1e-9, **TINY, **kwargs)
    trainer = pl.Trainer(
        max_epochs=1,
        default_root_dir=str(tmp_path),
        callbacks=[ModelCheckpoint(dirpath=tmp_path / "checkpoints", save_last=True), *callbacks],
        enable_progress_bar=False,
        enable_model_summary=False,
        logger=False,
    )
    try:
        trainer.fit(agent, _data(), ckpt_path=ckpt_path, weights_only=True)
    except _Killed:
        pass
    return agent, trainer


@pytest.mark.slow(reason="PPO fits over a MetaWorld task sequence, one killed and resumed")
def test_fit_runs_the_sequence_and_a_killed_run_resumes_in_the_same_task_at_the_same_step(tmp_path):
    killed, _ = _fit(tmp_path, callbacks=[_KillAt(task=1, steps=64)])
    saved = torch.load(tmp_path / "checkpoints" / "last.ckpt", weights_only=True)
    task, steps = int(saved["state_dict"]["task_index"]), int(saved["state_dict"]["task_steps"])
    assert task == 1 and steps in (32, 64)  # saved between iterations, in the second task
    progress = saved["sphere_progress"]
    assert len(progress["success_matrix"]) == 1 and len(progress["success_matrix"][0]) == 2  # stage 0's row
    assert [r[1] for r in progress["re_curve"]] == [0]
    assert set(progress["train_routing"]) == {"handle-press-side", "window-close"}

    first = _FirstPlace()
    resumed, trainer = _fit(tmp_path, callbacks=[first], ckpt_path=str(tmp_path / "checkpoints" / "last.ckpt"))
    assert first.place == (task, steps)  # same task, same step
    assert int(resumed.task_index) == 2 and len(resumed.success_matrix) == 2
    assert resumed.success_matrix[0] == progress["success_matrix"][0]  # stage 0 is not re-run
    assert [stage for _, stage, _ in resumed.re_curve] == [0, 1] and all(r > 1 for _, _, r in resumed.re_curve)
    assert resumed.eval_routing[-1].layers.keys() == {"handle-press-side", "window-close"}
    tokens = resumed.train_routing.layers["window-close"].tokens
    assert tokens == 3 * 2 * 2 * 16  # 3 iterations x 2 epochs x 2 minibatches x 16 states, the killed part included
    extra = resumed.extra_results()
    assert extra["tasks"] == TASKS and len(extra["stage_success"]) == 2
    trainer.test(resumed, _data(), verbose=False)
    assert 0.0 <= trainer.callback_metrics["test/avg_success"] <= 1.0
    assert "test/forgetting" in trainer.callback_metrics and "test/effective_rank" in trainer.callback_metrics
