"""PPO (Schulman et al. 2017, arXiv 1707.06347) through a task sequence, with a dense or top-k MoE actor and
SPHERE's Parseval penalty (Luo et al., ICML 2026, arXiv 2605.04712), as a LightningModule.

Written to be read top to bottom (cleanrl's style) and following the SPHERE reference (sphere-rl/sphere:
sbx PPO + ``SphereTopKMoEPPO``). One ``training_step`` = one PPO iteration on the current task, ``ppo_iteration``
(the whole algorithm, in this order; ``ContinualPPO`` is the Lightning glue around it):

1. rollout:  ``n_steps`` steps of ``num_envs`` copies; observations normalised by running statistics updated on
             every step and clipped to +-``obs_clip`` (SB3 VecNormalize, rewards raw); actions ~ N(mean, std),
             clipped to [-1, 1] for the env; a time-limit truncation bootstraps ``r += gamma V(s_final)`` (SB3);
2. GAE:      ``delta_t = r_t + gamma V(s_t+1) (1 - done) - V(s_t)``, ``A_t = delta_t + gamma lambda (1 - done) A_t+1``,
             returns ``A + V``;
3. update:   ``n_epochs`` passes over shuffled minibatches of ``batch_size``; advantages normalised per minibatch;
             actor ``L_pi = -E[min(A r, A clip(r, 1 +- eps))] - ent_coef H``, r the probability ratio; SPHERE adds
             the penalty's gradient scaled to ``penalty_ratio`` of ``||grad L_pi||`` (``zoo_tasks.rl.continual.
             sphere.scaled_sum``); critic ``L_V = vf_coef E[(R - V)^2]``; actor and critic are separate networks,
             each with its own Adam and global-norm clip ``max_grad_norm``;
4. learning rate: with ``target_kl`` (the reference script: 0.03) sbx's KL-adaptive rule after every minibatch
             (``lr /= 1.5`` when KL > 2 target, ``lr *= 1.5`` when KL < target / 2, within [1e-5, 1e-2]), starting
             at ``lr`` on each task; without it, SB3's linear ``lr -> lr_end`` over the first ``lr_end_fraction``
             of each task.

Continual protocol: one agent through ``data.tasks``, each task starting from the previous one's networks,
optimisers and observation statistics (the reference loads the previous checkpoint and its VecNormalize). When a
task's budget is spent, the stage ends: success on every task of the sequence (``eval_episodes`` greedy episodes
each, the mean action) is one row of the success matrix, ``r_e(K)`` of the actor's empirical NTK on a probe batch
is recorded, and the gate's routing on every task's evaluation states is summarised (experts by task).

Resumable mid-sequence: ``last.ckpt`` (every ``checkpoint_every_s`` seconds, ``zoo.callbacks.PeriodicCheckpoint``,
written between iterations) holds the networks, optimisers, observation statistics, the place in the sequence
(task index, env steps in that task), the adaptive learning rate, the success matrix and r_e curve so far and the
routing summaries. A resumed run continues in the same task at the same step; the episodes in progress restart.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from functools import partial
from typing import Any

import numpy as np
import pytorch_lightning as pl
import torch
from torch import Tensor
from torch.distributions import Normal

from zoo.callbacks.periodic_checkpoint import PeriodicCheckpoint
from zoo.errors import ConfigError
from zoo.moe import LayerSummary, Routing, RoutingSummary, weighted_aux_loss
from zoo.moe.weighting import check_aux_weights
from zoo.nn.running_mean_std import RunningMeanStd
from zoo_tasks.rl.continual.metaworld_envs import evaluate_success, finished_successes
from zoo_tasks.rl.continual.metrics import average_final_success, forgetting, stage_success
from zoo_tasks.rl.continual.networks import ACTORS, Critic, make_actor
from zoo_tasks.rl.continual.sphere import PENALTIES, effective_rank, empirical_ntk, penalty_value, scaled_sum

KL_LR_BOUNDS, KL_LR_FACTOR = (1e-5, 1e-2), 1.5


@dataclasses.dataclass
class TaskEnvs:
    """PPO's rollout state between iterations (cleanrl's ``envs`` and ``next_obs``): the training copies of task
    ``task`` (a Gymnasium vector env of ``num_envs`` copies) and their latest raw observations ``obs`` (num_envs,
    obs_dim)."""

    envs: Any
    task: int
    obs: np.ndarray


def ppo_iteration(
    agent: ContinualPPO, train: TaskEnvs, optimizers: list, timing: dict[str, float]
) -> tuple[dict[str, float], Tensor, Routing | None]:
    """One PPO iteration of ``agent`` on ``train``'s task, steps 1-4 of the module docstring; ``optimizers`` are
    the actor's and the critic's. Returns the metrics (the minibatches' mean losses, approximate KL and clip
    fraction; ``lr`` at the end; ``success``, the rate over the episodes that ended in the rollout, when any), the
    rollout's normalised observations (n_steps * num_envs, obs_dim) and the last minibatch's routing (None for a
    dense actor). Adds the wall and CPU seconds of the rollout (GAE included) and of the update to ``timing``."""
    hp, dm, actor, critic = agent.hparams, agent.dm, agent.actor, agent.critic
    actor_opt, critic_opt = optimizers
    task_steps, lr = int(agent.task_steps), agent.current_lr  # with target_kl: the rate the KL rule (4.) left
    if task_steps == 0:
        lr = hp.lr  # each task starts at the initial rate (the reference rebuilds its schedule)
    elif hp.target_kl is None:
        lr = linear_lr(hp.lr, hp.lr_end, hp.lr_end_fraction, task_steps / dm.steps_per_task)
    _set_lr(optimizers, lr)

    # 1. rollout (acting is not a training forward of the gate: eval mode)
    with torch.no_grad(), _timed(timing, "rollout"):
        actor.eval()
        obs_buf, act_buf, logp_buf, rew_buf, start_buf, val_buf, successes = [], [], [], [], [], [], []
        done = np.zeros(dm.num_envs, dtype=bool)  # only read from step 1 on: "step t began an episode"
        for _ in range(dm.n_steps):
            raw = _f32(train.obs)
            agent.obs_norm.update(raw)
            obs = agent.normalize(raw)
            out = actor(obs)
            dist = Normal(out.mean, out.log_std.exp())
            action = dist.sample()
            value = critic(obs)
            train.obs, reward, terminated, truncated, info = train.envs.step(action.clamp(-1.0, 1.0).numpy())
            reward = _f32(reward)
            successes += [float(success) for _, success in finished_successes(terminated, truncated, info)]
            # a time-limit end is not a terminal state: bootstrap from the finished episode's last observation
            cut = np.flatnonzero(truncated & ~terminated)
            if cut.size:
                reward[cut] += hp.gamma * critic(agent.normalize(_f32(np.stack(info["final_obs"][cut]))))
            obs_buf.append(obs)
            act_buf.append(action)
            logp_buf.append(dist.log_prob(action).sum(-1))
            rew_buf.append(reward)
            start_buf.append(_f32(done))
            val_buf.append(value)
            done = np.logical_or(terminated, truncated)
        actor.train()

        # 2. GAE
        next_value = critic(agent.normalize(_f32(train.obs)))
        values = torch.stack(val_buf)
        advantages = gae(
            torch.stack(rew_buf), values, torch.stack(start_buf), next_value, _f32(done), hp.gamma, hp.gae_lambda
        )
        obs, actions = torch.stack(obs_buf).flatten(0, 1), torch.stack(act_buf).flatten(0, 1)
        old_log_probs, returns = torch.stack(logp_buf).flatten(), (advantages + values).flatten()
        advantages = advantages.flatten()

    # 3. update: n_epochs passes over shuffled minibatches, an actor step then a critic step on each
    with _timed(timing, "update"):
        sums = dict.fromkeys(("policy_loss", "value_loss", "approx_kl", "clip_fraction", "penalty"), 0.0)
        updates, routing, task = 0, None, dm.tasks[train.task]
        for _ in range(hp.n_epochs):
            order = torch.randperm(obs.shape[0])
            for start in range(0, obs.shape[0], hp.batch_size):
                idx = order[start : start + hp.batch_size]
                mb_obs, mb_adv = obs[idx], advantages[idx]
                out = actor(mb_obs)
                dist = Normal(out.mean, out.log_std.exp())
                ratio = torch.exp(dist.log_prob(actions[idx]).sum(-1) - old_log_probs[idx])
                if mb_adv.numel() > 1:
                    mb_adv = (mb_adv - mb_adv.mean()) / (mb_adv.std() + 1e-8)
                surrogate = torch.min(mb_adv * ratio, mb_adv * ratio.clamp(1 - hp.clip_range, 1 + hp.clip_range))
                policy_loss = -surrogate.mean() - hp.ent_coef * dist.entropy().sum(-1).mean()
                if out.routing is not None and agent.aux_weights:  # none in the reference
                    policy_loss = policy_loss + weighted_aux_loss(out.routing, agent.aux_weights)
                # SPHERE: the penalty's gradient, rescaled to penalty_ratio * ||grad L_pi||, added to grad L_pi
                pen = None if hp.penalty == "none" else penalty_value(hp.penalty, out.weights, out.features)
                params = list(actor.parameters())
                grads = torch.autograd.grad(policy_loss, params, retain_graph=pen is not None, allow_unused=True)
                if pen is not None:
                    grads = scaled_sum(grads, torch.autograd.grad(pen, params, allow_unused=True), hp.penalty_ratio)
                _clipped_step(actor_opt, params, grads, hp.max_grad_norm)

                value_loss = hp.vf_coef * (returns[idx] - critic(mb_obs)).square().mean()
                params = list(critic.parameters())
                _clipped_step(critic_opt, params, torch.autograd.grad(value_loss, params), hp.max_grad_norm)

                with torch.no_grad():
                    approx_kl = float(((ratio - 1) - ratio.log()).mean())
                    sums["approx_kl"] += approx_kl
                    sums["clip_fraction"] += float(((ratio - 1).abs() > hp.clip_range).float().mean())
                sums["policy_loss"] += float(policy_loss.detach())
                sums["value_loss"] += float(value_loss.detach())
                sums["penalty"] += float(pen.detach()) if pen is not None else 0.0
                updates += 1
                # 4. sbx's KLAdaptiveLR: shrink the step when the policy moved too far, grow it when it barely moved
                if hp.target_kl is not None:
                    if approx_kl > 2 * hp.target_kl:
                        lr /= KL_LR_FACTOR
                    elif approx_kl < hp.target_kl / 2:
                        lr *= KL_LR_FACTOR
                    lr = min(max(lr, KL_LR_BOUNDS[0]), KL_LR_BOUNDS[1])
                    _set_lr(optimizers, lr)
                if out.routing is not None:
                    routing = out.routing.detach()
                    agent.train_routing.add({task: routing})
    metrics = {k: v / updates for k, v in sums.items()} | {"lr": lr}
    if successes:
        metrics["success"] = float(np.mean(successes))
    return metrics, obs, routing


def gae(
    rewards: Tensor, values: Tensor, starts: Tensor, next_value: Tensor, next_start: Tensor, gamma: float, lam: float
) -> Tensor:
    """Generalised advantage estimates (Schulman et al. 2016) (n_steps, N) of rewards and values (n_steps, N), the
    values after the last step ``next_value`` (N,); ``starts[t]`` = 1 where step t began a new episode (SB3's
    ``episode_starts``; ``next_start`` (N,) after the last step), so nothing is bootstrapped across it."""
    n = rewards.shape[0]
    advantages, last = torch.zeros_like(rewards), torch.zeros_like(next_value)
    for t in reversed(range(n)):
        last_step = t == n - 1
        following = next_value if last_step else values[t + 1]
        not_start = 1.0 - (next_start if last_step else starts[t + 1])
        delta = rewards[t] + gamma * following * not_start - values[t]
        last = delta + gamma * lam * not_start * last
        advantages[t] = last
    return advantages


def linear_lr(start: float, end: float, end_fraction: float, progress: float) -> float:
    """SB3's ``get_linear_fn(start, end, end_fraction)`` at ``progress``, the fraction of the task done."""
    if progress >= end_fraction:
        return end
    return start + progress * (end - start) / end_fraction


def _set_lr(optimizers: list, lr: float) -> None:
    for opt in optimizers:
        for group in opt.param_groups:
            group["lr"] = lr


def _clipped_step(optimizer, params: list[torch.nn.Parameter], grads, max_norm: float) -> None:
    for p, g in zip(params, grads):
        p.grad = g
    torch.nn.utils.clip_grad_norm_(params, max_norm)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)


def _f32(x) -> Tensor:
    return torch.as_tensor(x, dtype=torch.float32)


@contextlib.contextmanager
def _timed(timing: dict[str, float], part: str):
    """Adds the block's wall seconds and CPU seconds of this process (what a shared machine's load does not
    inflate) to ``timing``."""
    start, cpu = time.perf_counter(), time.process_time()
    yield
    timing[f"{part}_s"] += time.perf_counter() - start
    timing[f"{part}_cpu_s"] += time.process_time() - cpu


class ContinualPPO(pl.LightningModule):
    """PPO agent for a MetaWorld task sequence (``MetaWorldSequenceDataModule``): ``actor`` "dense" or "moe"
    (E experts, top-k gate ``zoo.moe.make_router(router, width, E, top_k, **router_kwargs)``), dense critic, and
    ``dispatch`` "sparse" (each expert runs on its routed states) or "dense" (every expert on every state, as the
    reference; same maths), ``penalty`` in "none" | "sphere" | "unweighted" (ablation: Parseval penalty on the
    routed experts' concatenated features without gate weights) | "gating" (the reference's gate-weight variant).

    Reference settings (sphere-rl/sphere configs + HumanoidBench script): MLPs 3 x 256 ReLU, 10 experts, top-2,
    gamma 0.99, GAE 0.95, clip 0.2, 10 epochs, vf 0.5, entropy 0, max-grad-norm 0.5, lr 3e-4 (-> 1e-4),
    target-KL 0.03, penalty ratio 0.001 of the policy gradient's norm. Networks are built in ``setup`` once the
    environment's spaces are known.
    """

    def __init__(
        self,
        actor: str = "dense",
        width: int = 256,
        depth: int = 3,
        num_experts: int = 10,
        top_k: int = 2,
        router: str = "topk",
        router_kwargs: dict | None = None,
        dispatch: str = "sparse",
        penalty: str = "none",
        penalty_ratio: float = 0.001,
        aux_weights: dict[str, float] | None = None,
        lr: float = 3e-4,
        lr_end: float = 1e-4,
        lr_end_fraction: float = 0.5,
        target_kl: float | None = 0.03,
        n_epochs: int = 10,
        batch_size: int = 256,
        gamma: float = 0.99,
        gae_lambda: float = 0.95,
        clip_range: float = 0.2,
        ent_coef: float = 0.0,
        vf_coef: float = 0.5,
        max_grad_norm: float = 0.5,
        obs_clip: float = 10.0,
        ntk_probe: int = 32,
        ntk_every: int = 0,
        checkpoint_every_s: float = 300.0,
    ):
        super().__init__()
        if actor not in ACTORS:
            raise ConfigError(f"model.init_args.actor: unknown actor {actor!r}; valid: {', '.join(ACTORS)}")
        if penalty not in PENALTIES:
            raise ConfigError(f"model.init_args.penalty: unknown {penalty!r}; valid: {', '.join(PENALTIES)}")
        if penalty != "none" and actor != "moe":
            raise ConfigError(f"model.init_args.penalty={penalty!r} regularises an MoE actor's experts; set actor: moe")
        if penalty != "none" and penalty_ratio <= 0:
            raise ConfigError(f"model.init_args.penalty_ratio must be > 0 with a penalty, got {penalty_ratio}")
        for key, value in (("n_epochs", n_epochs), ("batch_size", batch_size), ("ntk_probe", ntk_probe)):
            if value < 1:
                raise ConfigError(f"model.init_args.{key} must be >= 1, got {value}")
        if checkpoint_every_s < 0:
            raise ConfigError(f"checkpoint_every_s must be >= 0 (0: no mid-run checkpoints), got {checkpoint_every_s}")
        if actor == "moe":  # a bad gate fails when the config is read, not at setup
            moe = dict(num_experts=num_experts, top_k=top_k, router=router, router_kwargs=router_kwargs)
            moe["dispatch"] = dispatch
            make_actor("moe", 2, 1, 2, 1, **moe)
        self.save_hyperparameters()
        self.automatic_optimization = False
        self.aux_weights = check_aux_weights(aux_weights or {})
        self.actor = None
        self.dm = None
        self._train: TaskEnvs | None = None
        self.register_buffer("task_index", torch.zeros((), dtype=torch.long))
        self.register_buffer("task_steps", torch.zeros((), dtype=torch.long))  # env steps done in the current task
        self.current_lr = lr
        self.success_matrix: list[list[float]] = []
        self.return_matrix: list[list[float]] = []
        self.re_curve: list[tuple[int, int, float]] = []  # (env steps in the sequence, stage, r_e(K))
        self.train_routing = RoutingSummary()  # training load, one layer per task
        self.eval_routing: list[RoutingSummary] = []  # per stage: the gate on each task's evaluation states
        # wall seconds, and CPU seconds of this process (what a shared machine's load does not inflate)
        self._timing = {"rollout_s": 0.0, "update_s": 0.0, "rollout_cpu_s": 0.0, "update_cpu_s": 0.0}
        self._timing |= {"fit_s": 0.0, "fit_env_steps": 0}
        self._fit_start: float | None = None

    # ------------------------------------------------------------------------------------------ building
    def build(self, obs_dim: int, act_dim: int) -> None:
        """Create the actor, the critic and the observation statistics (idempotent)."""
        if self.actor is not None:
            return
        hp = self.hparams
        moe = dict(num_experts=hp.num_experts, top_k=hp.top_k, router=hp.router, router_kwargs=hp.router_kwargs)
        moe["dispatch"] = hp.dispatch
        self.obs_dim, self.act_dim = obs_dim, act_dim
        self.actor = make_actor(hp.actor, obs_dim, act_dim, hp.width, hp.depth, **(moe if hp.actor == "moe" else {}))
        self.critic = Critic(obs_dim, hp.width, hp.depth)
        self.obs_norm = RunningMeanStd(obs_dim)

    def setup(self, stage: str) -> None:
        from zoo_tasks.rl.continual.data import MetaWorldSequenceDataModule

        dm = self.trainer.datamodule
        if not isinstance(dm, MetaWorldSequenceDataModule):
            raise ConfigError(
                f"ContinualPPO needs zoo_tasks.rl.continual.data.MetaWorldSequenceDataModule as data, "
                f"got {type(dm).__name__}"
            )
        self.dm = dm
        probe = dm.eval_envs_for(0)
        self.build(probe.single_observation_space.shape[0], probe.single_action_space.shape[0])
        probe.close()

    def configure_callbacks(self) -> list[pl.Callback]:
        every = self.hparams.checkpoint_every_s
        return [PeriodicCheckpoint(every)] if every else []

    def configure_optimizers(self):
        actor_opt = torch.optim.Adam(self.actor.parameters(), lr=self.hparams.lr, eps=1e-8)
        critic_opt = torch.optim.Adam(self.critic.parameters(), lr=self.hparams.lr, eps=1e-8)
        return [actor_opt, critic_opt]

    def on_save_checkpoint(self, checkpoint: dict) -> None:
        """The sequence's progress besides ``state_dict`` (plain lists: loads with ``weights_only=True``)."""
        checkpoint["sphere_progress"] = {
            "current_lr": self.current_lr,
            "success_matrix": self.success_matrix,
            "return_matrix": self.return_matrix,
            "re_curve": [list(r) for r in self.re_curve],
            "train_routing": _summary_state(self.train_routing),
            "eval_routing": [_summary_state(s) for s in self.eval_routing],
            "timing": self._timing_so_far(),
        }

    def on_load_checkpoint(self, checkpoint: dict) -> None:
        progress = checkpoint.get("sphere_progress")
        if progress is None:
            return
        self.current_lr = float(progress["current_lr"])
        self.success_matrix = [list(map(float, r)) for r in progress["success_matrix"]]
        self.return_matrix = [list(map(float, r)) for r in progress["return_matrix"]]
        self.re_curve = [(int(s), int(k), float(r)) for s, k, r in progress["re_curve"]]
        self.train_routing = _summary_from(progress["train_routing"])
        self.eval_routing = [_summary_from(s) for s in progress["eval_routing"]]
        self._timing = dict(progress["timing"])

    # ------------------------------------------------------------------------------------------ acting
    def normalize(self, obs: Tensor) -> Tensor:
        clip = self.hparams.obs_clip
        return self.obs_norm(obs).clamp(-clip, clip)

    @torch.no_grad()
    def greedy_action(self, raw_obs: np.ndarray, routings: list | None = None) -> np.ndarray:
        """The mean action for raw observations (N, obs_dim), the actor in eval mode (no gate noise, no balancing
        step); the gate's routing is appended to ``routings`` when given."""
        was_training = self.actor.training
        self.actor.eval()
        try:
            out = self.actor(self.normalize(_f32(raw_obs)))
        finally:
            self.actor.train(was_training)
        if routings is not None and out.routing is not None:
            routings.append(out.routing.detach())
        return out.mean.numpy()

    # ------------------------------------------------------------------------------------------ the loop
    def sequence_env_steps(self) -> int:
        return int(self.task_index) * self.dm.steps_per_task + int(self.task_steps)

    def _log_to_loggers(self, metrics: dict[str, float]) -> None:
        for logger in self.loggers:  # x-axis = environment steps over the whole sequence
            logger.log_metrics(metrics, step=self.sequence_env_steps())

    def on_train_start(self) -> None:
        self._fit_start, self._fit_start_steps = time.perf_counter(), self.sequence_env_steps()

    def on_train_batch_start(self, batch, batch_idx: int) -> int | None:
        # the budget is the place in the sequence, not the batch index: a resumed run's loader starts again at 0
        return -1 if int(self.task_index) >= len(self.dm.tasks) else None

    def _train_envs(self) -> TaskEnvs:
        """The current task's training copies (built on the first iteration of a task, also after a resume)."""
        task = int(self.task_index)
        if self._train is None or self._train.task != task:
            if self._train is not None:
                self._train.envs.close()
            envs = self.dm.train_envs(task)
            self._train = TaskEnvs(envs, task, envs.reset()[0])
        return self._train

    def training_step(self, iteration, batch_idx: int) -> dict:
        """One PPO iteration on the current task (``ppo_iteration``); the stage ends (evaluation of every task,
        r_e(K)) when the task's budget is spent. Returns ``{"loss": L_pi, "routing": {"actor": Routing}}`` (dense: no
        routing)."""
        metrics, obs, routing = ppo_iteration(self, self._train_envs(), self.optimizers(), self._timing)
        self.current_lr = metrics["lr"]
        self.task_steps += self.dm.rollout_steps
        if self.hparams.ntk_every and (batch_idx + 1) % self.hparams.ntk_every == 0:
            metrics["effective_rank"] = self.record_effective_rank(obs)
        self._log_to_loggers({f"train/{k}": v for k, v in metrics.items()})
        if int(self.task_steps) >= self.dm.steps_per_task:
            self.end_stage(obs)
        result = {"loss": torch.tensor(metrics["policy_loss"])}
        return result | ({"routing": {"actor": routing}} if routing is not None else {})

    def end_stage(self, probe_obs: Tensor) -> None:
        """Success on every task of the sequence (one row of the success matrix), r_e(K), the gate by task; then
        move to the next task."""
        stage = int(self.task_index)
        self.record_effective_rank(probe_obs, stage=stage)
        successes, returns, routing = [], [], RoutingSummary()
        for j, task in enumerate(self.dm.tasks):
            envs, seen = self.dm.eval_envs_for(j), []
            success, ret = evaluate_success(partial(self.greedy_action, routings=seen), envs, self.dm.eval_episodes)
            envs.close()
            successes.append(success)
            returns.append(ret)
            for r in seen:
                routing.add({task: r})
        self.success_matrix.append(successes)
        self.return_matrix.append(returns)
        self.eval_routing.append(routing)
        tasks = self.dm.tasks
        self._log_to_loggers({f"stage/success_{t}": s for t, s in zip(tasks, successes)})
        self.task_index += 1
        self.task_steps.zero_()

    def record_effective_rank(self, obs: Tensor, stage: int = -1) -> float:
        """r_e(K) of the actor's empirical NTK on ``ntk_probe`` states of ``obs`` (a fixed, seeded subset):
        outputs = the policy mean, (probe x A) rows. Appended to the r_e curve."""
        g = torch.Generator().manual_seed(int(self.task_index))
        probe = obs[torch.randperm(obs.shape[0], generator=g)[: self.hparams.ntk_probe]]
        value = effective_rank(self.actor_ntk(probe))
        self.re_curve.append((self.sequence_env_steps(), stage, value))
        return value

    def actor_ntk(self, obs: Tensor) -> Tensor:
        """K = J J^T of the policy mean (B * A outputs) w.r.t. all actor parameters, the gate in eval mode. An MoE
        actor runs its dense path here (same maths; torch.func cannot transform segment_mm's autograd function)."""
        from torch.func import functional_call

        was_training, dispatch = self.actor.training, getattr(self.actor, "dispatch", None)
        self.actor.eval()
        if dispatch is not None:
            self.actor.dispatch = "dense"
        try:
            params = dict(self.actor.named_parameters())
            return empirical_ntk(lambda p: functional_call(self.actor, p, (obs,)).mean.flatten(), params)
        finally:
            self.actor.train(was_training)
            if dispatch is not None:
                self.actor.dispatch = dispatch

    def _timing_so_far(self) -> dict:
        timing = dict(self._timing)
        if self._fit_start is not None:
            timing["fit_s"] += time.perf_counter() - self._fit_start
            timing["fit_env_steps"] += self.sequence_env_steps() - self._fit_start_steps
        return timing

    def on_train_end(self) -> None:
        self._timing, self._fit_start = self._timing_so_far(), None
        if self._train is not None:
            self._train.envs.close()
            self._train = None

    # ------------------------------------------------------------------------------------------ reporting
    def test_step(self, batch, batch_idx: int) -> None:
        """The continual metrics of the success matrix (the sequence must be finished)."""
        if len(self.success_matrix) < len(self.dm.tasks):
            raise ConfigError(
                f"the sequence is not finished ({len(self.success_matrix)} of {len(self.dm.tasks)} stages): "
                "test after fit, or from its last checkpoint"
            )
        m = self.success_matrix
        self.log("test/avg_success", average_final_success(m), batch_size=1)
        f = forgetting(m)
        if f is not None:
            self.log("test/forgetting", f, batch_size=1)
        self.log("test/avg_stage_success", float(np.mean(stage_success(m))), batch_size=1)
        stage_re = [r for _, s, r in self.re_curve if s >= 0]
        if stage_re:
            self.log("test/effective_rank", stage_re[-1], batch_size=1)

    def extra_results(self) -> dict:
        """Diagnostics for the record: success matrix, r_e curve, routing load per task, speed."""
        t = self._timing
        moe = self.hparams.actor == "moe"
        return {
            "tasks": list(self.dm.tasks) if self.dm is not None else [],
            "steps_per_task": self.dm.steps_per_task if self.dm is not None else None,
            "success_matrix": self.success_matrix,
            "return_matrix": self.return_matrix,
            "stage_success": stage_success(self.success_matrix) if self.success_matrix else [],
            "effective_rank": [[s, k, r] for s, k, r in self.re_curve],
            "routing_by_task_train": self.train_routing.to_dict() if moe else {},
            "routing_by_task_eval": [s.to_dict() for s in self.eval_routing] if moe else [],
            "env_steps_per_s": t["fit_env_steps"] / t["fit_s"] if t["fit_s"] else None,
            # PPO iterations only (no evaluation), per CPU second of the process: comparable on a shared machine
            "train_env_steps_per_cpu_s": _per(t["fit_env_steps"], t.get("rollout_cpu_s", 0) + t.get("update_cpu_s", 0)),
            "rollout_s": t["rollout_s"],
            "update_s": t["update_s"],
            "rollout_cpu_s": t.get("rollout_cpu_s"),
            "update_cpu_s": t.get("update_cpu_s"),
            "train_time_s": t["fit_s"],
            "params": {
                "actor": sum(p.numel() for p in self.actor.parameters()),
                "critic": sum(p.numel() for p in self.critic.parameters()),
            },
        }


def _per(steps: int, seconds: float) -> float | None:
    return steps / seconds if seconds else None


def _summary_state(summary: RoutingSummary) -> dict:
    return {name: dataclasses.asdict(s) for name, s in summary.layers.items()}


def _summary_from(state: dict) -> RoutingSummary:
    return RoutingSummary({name: LayerSummary(**s) for name, s in state.items()})
