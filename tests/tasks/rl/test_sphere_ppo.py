"""SPHERE's PPO agent: GAE against its slow definition, the penalty's gradient at the configured ratio, a real fit
through a two-task sequence (success matrix, r_e(K), routing by task), and a killed run resuming in the same task
at the same step."""

import pytest
import pytorch_lightning as pl
import torch
from pytorch_lightning.callbacks import ModelCheckpoint

from zoo.errors import ConfigError
from zoo_tasks.rl.continual.data import MetaWorldSequenceDataModule
from zoo_tasks.rl.continual.ppo import ContinualPPO
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
    agent = ContinualPPO(gamma=0.9, gae_lambda=0.8)
    g = torch.Generator().manual_seed(0)
    rewards, values = torch.randn(6, 3, generator=g), torch.randn(6, 3, generator=g)
    starts = torch.tensor([[1, 0, 0], [0, 0, 1], [0, 1, 0], [0, 0, 0], [1, 0, 0], [0, 0, 1]], dtype=torch.float32)
    next_value, next_start = torch.randn(3, generator=g), torch.tensor([0.0, 1.0, 0.0])
    fast = agent.gae(rewards, values, starts, next_value, next_start)
    torch.testing.assert_close(fast, slow_gae(rewards, values, starts, next_value, next_start, 0.9, 0.8))


def test_sphere_update_adds_the_penalty_gradient_at_the_configured_ratio():
    torch.manual_seed(0)
    agent = ContinualPPO(actor="moe", penalty="sphere", penalty_ratio=0.05, **TINY)
    agent.build(6, 2)
    g = torch.Generator().manual_seed(0)
    args = (torch.randn(32, 6, generator=g), torch.randn(32, 2, generator=g), torch.randn(32, generator=g))
    loss, pen, _, _ = agent.actor_losses(*args, torch.randn(32, generator=g))
    params = list(agent.actor.parameters())
    base = torch.autograd.grad(loss, params, retain_graph=True, allow_unused=True)
    total = agent.actor_gradients(loss, pen)
    added = [t - (b if b is not None else 0) for t, b in zip(total, base)]
    assert float(grad_norm(added)) == pytest.approx(0.05 * float(grad_norm(base)), rel=2e-3)


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
