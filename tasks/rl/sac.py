"""Soft Actor-Critic (Haarnoja et al. 2018, arXiv 1801.01290) as a LightningModule, with SimBa (Lee et al., ICLR
2025, arXiv 2410.09754) / ScaleMoE (ICML 2026) / MLP networks.

One ``training_step`` = one agent step: observe, act (uniformly random for the first ``learning_starts`` steps),
store the transition, then ``updates_per_step`` SAC updates on replay batches (SimBa's update-to-data ratio 2).
Each update (``sac_update``) follows the SimBa reference (SonyResearch/simba, ``scale_rl/agents/sac``) in its
order:

1. actor:        ``L_pi = E[alpha * log pi(a|s) - min_i Q_i(s, a)]``, a ~ pi(.|s) reparameterised (critic frozen);
2. temperature:  ``L_alpha = alpha * (H_batch - H_target)``, H_target = ``target_entropy_coef * |A|``;
3. critic:       ``L_Q = sum_i E[(Q_i(s, a) - y)^2]``, ``y = r + gamma (1 - terminated) (min_i Q'_i(s', a') -
                 alpha log pi(a'|s'))``, a' ~ pi(.|s') from the just-updated actor, Q' the target critic;
4. target:       ``theta' <- (1 - tau) theta' + tau theta``.
MoE networks add their gates' aux losses (``aux_weights``, default Switch load balance 0.01, weighted by
``zoo.moe.weighted_aux_loss``) to L_pi and L_Q; each critic's gate adds its own (L_Q sums over the critics).
The gates' routings are values the update collects: ``training_step`` returns ``{"loss": L_Q, "routing":
{"actor": ..., "critic": ...}}`` of its last update (for the routing-stats callback), and every update's routing is
accumulated in a ``zoo.moe.RoutingSummary`` (checkpointed; stored in the record as the training load).

Observations are normalised by running statistics updated on every observed state (SimBa). Evaluation acts
greedily (``tanh(mean)``), ``eval_episodes`` episodes every ``eval_every`` environment steps (``val/return``),
and once more on the final policy (``test/return``).

A run is resumable mid-training: ``last.ckpt`` is rewritten every ``checkpoint_every_s`` seconds
(``zoo.callbacks.PeriodicCheckpoint``) and holds the networks, optimisers, temperature, observation statistics,
step counter, replay buffer, evaluation curve and routing summary. A resumed run continues from that agent step
with the same buffer; only the episode in progress when the checkpoint was written is dropped (the environment
starts a new one), since dm-control's task state is not part of the checkpoint.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import os
import time
from collections.abc import Iterable, Sequence
from typing import NamedTuple

import numpy as np
import pytorch_lightning as pl
import torch
import torch.nn.functional as F
from torch import Tensor
from torch.optim import Optimizer

from zoo.callbacks.periodic_checkpoint import PeriodicCheckpoint
from zoo.errors import ConfigError
from zoo.moe import LayerSummary, Routing, RoutingSummary, require_router, routing_summary, weighted_aux_loss
from zoo.moe.weighting import check_aux_weights
from zoo.nn.running_mean_std import RunningMeanStd
from zoo.utils.figures import pyplot, save_figure
from zoo_tasks.rl.networks import GATE, GATE_NEEDS, check_architecture, check_moe_settings, make_actor, make_critic
from zoo_tasks.rl.replay import Batch, ReplayBuffer


def tanh_normal_sample(mean: Tensor, log_std: Tensor, temperature: float = 1.0) -> tuple[Tensor, Tensor]:
    """Reparameterised sample of ``tanh(N(mean, (temperature * std)^2))`` and its log-density (B, A) -> (B, A), (B,).

    ``log pi(a) = log N(u) - sum log(1 - tanh(u)^2)`` with the stable form ``2 (log 2 - u - softplus(-2u))``.
    """
    log_std = log_std + math.log(temperature) if temperature != 1.0 else log_std
    eps = torch.randn_like(mean)
    u = mean + log_std.exp() * eps
    log_prob = (-0.5 * eps.square() - log_std - 0.5 * math.log(2 * math.pi)).sum(-1)
    log_prob = log_prob - (2.0 * (math.log(2.0) - u - F.softplus(-2.0 * u))).sum(-1)
    return torch.tanh(u), log_prob


class UpdateOutput(NamedTuple):
    """What an update step returns: ``losses`` (name -> scalar tensor, for logging) and ``routing`` (gate name ->
    `Routing` of the states it routed in this step; empty for dense networks)."""

    losses: dict[str, Tensor]
    routing: dict[str, Routing]


def sac_update(agent: SACAgent, batch: Batch, optimizers: Sequence[Optimizer] | None = None) -> UpdateOutput:
    """One SAC update on a replay batch (steps 1-4 of the module docstring, in the SimBa reference's order), each
    loss stepped with its optimiser of ``optimizers = (actor, critic, temperature)``. Without ``optimizers`` it
    only computes the losses at the current weights (no step, no target update): ``loss_and_routing``.
    Returns the losses (scalars, for logging) and every gate's routing (actor, then critics)."""
    hp = agent.hparams
    actor_opt, critic_opt, temp_opt = optimizers or (None, None, None)

    def step(optimizer: Optimizer | None, loss: Tensor) -> None:
        if optimizer is not None:
            optimizer.zero_grad()
            agent.manual_backward(loss)
            optimizer.step()

    obs, next_obs = agent.normalize(batch.obs), agent.normalize(batch.next_obs)

    # 1. actor: the critic is frozen, so L_pi's gradient reaches the actor through the action only
    alpha = agent.log_alpha.exp().detach()
    policy = agent.actor(obs)
    action, log_prob = tanh_normal_sample(policy.mean, policy.log_std)
    agent.critic.requires_grad_(False)
    q_pi = agent.critic(obs, action).q.min(0).values
    agent.critic.requires_grad_(True)
    routing = {} if policy.routing is None else {"actor": policy.routing}
    actor_aux = _aux_loss(routing.values(), agent.aux_weights)
    actor_loss = (alpha * log_prob - q_pi).mean() + actor_aux
    step(actor_opt, actor_loss)

    # 2. temperature
    entropy = -log_prob.detach().mean()
    temperature_loss = agent.log_alpha.exp() * (entropy - agent.target_entropy)
    step(temp_opt, temperature_loss)

    # 3. critic, regressed on the soft target of the just-updated actor and temperature
    with torch.no_grad():
        alpha = agent.log_alpha.exp()
        next_policy = agent.actor(next_obs)
        next_action, next_log_prob = tanh_normal_sample(next_policy.mean, next_policy.log_std)
        next_q = agent.target_critic(next_obs, next_action).q.min(0).values
        target = batch.reward + hp.gamma * (1.0 - batch.terminated) * (next_q - alpha * next_log_prob)
    q, critic_routings = agent.critic(obs, batch.action)  # (num_q, B), one routing per MoE critic
    critic_aux = _aux_loss(critic_routings, agent.aux_weights)
    critic_loss = (q - target).square().sum(0).mean() + critic_aux
    step(critic_opt, critic_loss)

    routing |= dict(zip(agent.critic_names(), critic_routings))
    losses = dict(actor_loss=actor_loss, actor_aux=actor_aux, entropy=entropy, temperature_loss=temperature_loss)
    losses |= dict(critic_loss=critic_loss, critic_aux=critic_aux, q_mean=q.detach().mean())
    if optimizers is None:
        return UpdateOutput(losses, routing)

    # 4. target: Polyak averaging of the parameters; buffers (a router's balancing state, e.g. sigmoid_bias's
    # expert bias) are not learned and are copied
    with torch.no_grad():
        for target_param, param in zip(agent.target_critic.parameters(), agent.critic.parameters()):
            target_param.lerp_(param, hp.tau)
        for target_buffer, buffer in zip(agent.target_critic.buffers(), agent.critic.buffers()):
            target_buffer.copy_(buffer)
    return UpdateOutput(losses, routing)


def _aux_loss(routings: Iterable[Routing], weights: dict[str, float]) -> Tensor:
    """The gates' weighted aux losses, summed over gates (one per network: each adds its own)."""
    return sum((weighted_aux_loss(routing, weights) for routing in routings), torch.zeros(()))


class SACAgent(pl.LightningModule):
    """SAC agent whose actor and critic are ``architecture`` in ``mlp | simba | scalemoe-output | scalemoe-feature``.

    Reference sizes (SimBa, Lee et al. ICLR 2025): actor 1 block x 128, critic 2 blocks x 512, AdamW lr 1e-4,
    weight decay 1e-2, initial temperature 0.01, target entropy -|A|/2, tau 0.005, gamma 0.99, batch 256,
    5000 random steps, one critic on the DeepMind Control Suite (``num_q=1``: the reference enables clipped
    double-Q only for episodic tasks). ScaleMoE experts have width ``*_expert_hidden``, or, when None, the width
    that gives a state the same active parameters as the dense SimBa network of width ``*_hidden``; their gates
    are ``zoo.moe.make_router(router, obs_dim, num_experts, top_k=top_k, **router_kwargs)`` (ScaleMoE: topk).
    Needs a ``DMControlDataModule`` (the environment); networks are built in ``setup`` once its spaces are known.
    """

    def __init__(
        self,
        architecture: str = "simba",
        actor_hidden: int = 128,
        actor_blocks: int = 1,
        critic_hidden: int = 512,
        critic_blocks: int = 2,
        num_experts: int = 8,
        top_k: int = 2,
        router: str = "topk",
        router_kwargs: dict | None = None,
        actor_expert_hidden: int | None = None,
        critic_expert_hidden: int | None = None,
        num_q: int = 1,
        normalize_observations: bool = True,
        lr: float = 1e-4,
        weight_decay: float = 1e-2,
        initial_temperature: float = 0.01,
        target_entropy_coef: float = -0.5,
        tau: float = 0.005,
        gamma: float = 0.99,
        batch_size: int = 256,
        updates_per_step: int = 2,
        learning_starts: int = 5000,
        buffer_capacity: int = 1_000_000,
        aux_weights: dict[str, float] | None = None,
        log_every: int = 500,
        checkpoint_every_s: float = 300.0,
    ):
        super().__init__()
        check_architecture(architecture)
        if num_q < 1:
            raise ConfigError(f"num_q must be >= 1, got {num_q}")
        if checkpoint_every_s < 0:
            raise ConfigError(f"checkpoint_every_s must be >= 0 (0: no mid-run checkpoints), got {checkpoint_every_s}")
        for key, value, least in (("batch_size", batch_size, 1), ("buffer_capacity", buffer_capacity, 1)):
            if value < least:
                raise ConfigError(f"{key} must be >= {least}, got {value}")
        if architecture.startswith("scalemoe"):  # a bad gate fails when the config is read, not at setup
            check_moe_settings(num_experts, top_k)
            require_router(router, GATE, GATE_NEEDS)
        self.save_hyperparameters()
        self.automatic_optimization = False
        self.aux_weights = check_aux_weights({"load_balance": 0.01} if aux_weights is None else aux_weights)
        self.actor = None
        self.env = self.eval_env = self.buffer = None
        self.register_buffer("agent_steps", torch.zeros((), dtype=torch.long))
        self.eval_history: list[tuple[int, float]] = []
        self._timing = {"update_s": 0.0, "updates": 0, "fit_s": 0.0, "fit_env_steps": 0}
        self._fit_start: float | None = None  # set while a fit runs (on_train_start .. on_train_end)

    # ----------------------------------------------------------------------------------------------- building
    def build(self, obs_dim: int, act_dim: int) -> None:
        """Create networks, target critic, temperature and observation statistics (idempotent)."""
        if self.actor is not None:
            return
        hp = self.hparams
        moe = dict(num_experts=hp.num_experts, top_k=hp.top_k, router=hp.router, router_kwargs=hp.router_kwargs)
        self.obs_dim, self.act_dim = obs_dim, act_dim
        self.actor = make_actor(
            hp.architecture,
            obs_dim,
            act_dim,
            hp.actor_hidden,
            hp.actor_blocks,
            expert_hidden=hp.actor_expert_hidden,
            **moe,
        )
        self.critic = make_critic(
            hp.architecture,
            obs_dim,
            act_dim,
            hp.critic_hidden,
            hp.critic_blocks,
            hp.num_q,
            expert_hidden=hp.critic_expert_hidden,
            **moe,
        )
        self.target_critic = copy.deepcopy(self.critic).requires_grad_(False)
        self.obs_norm = RunningMeanStd(obs_dim)
        self.log_alpha = torch.nn.Parameter(torch.tensor(math.log(hp.initial_temperature)))
        self.target_entropy = hp.target_entropy_coef * act_dim
        self.train_routing = RoutingSummary()  # every update's gates, accumulated

    def setup(self, stage: str) -> None:
        from zoo_tasks.rl.data import DMControlDataModule

        dm = self.trainer.datamodule
        if self.env is not None:  # fit then test on the same module: keep env, buffer and statistics
            return
        if not isinstance(dm, DMControlDataModule):
            raise ConfigError(f"SACAgent needs zoo_tasks.rl.data.DMControlDataModule as data, got {type(dm).__name__}")
        self.dm, seed = dm, dm.env_seed()
        self.env, self.eval_env = dm.make_env(seed), dm.make_env(seed + 10_000)
        self.build(self.env.observation_space.shape[0], self.env.action_space.shape[0])
        capacity = min(self.hparams.buffer_capacity, dm.agent_steps)
        self.buffer = ReplayBuffer(capacity, self.obs_dim, self.act_dim)
        self._obs, _ = self.env.reset()
        self._episode_return = 0.0

    def configure_callbacks(self) -> list[pl.Callback]:
        every = self.hparams.checkpoint_every_s
        return [PeriodicCheckpoint(every)] if every else []

    def on_save_checkpoint(self, checkpoint: dict) -> None:
        """Everything a resumed run needs besides ``state_dict``, as tensors and plain lists (loads with
        ``weights_only=True``). The training time so far is stored so the record's speed covers the whole run."""
        if self.buffer is not None:
            checkpoint["replay_buffer"] = self.buffer.state_dict()
        checkpoint["sac_progress"] = {
            "eval_history": [[s, r] for s, r in self.eval_history],
            "train_routing": {name: dataclasses.asdict(s) for name, s in self.train_routing.layers.items()},
            "timing": self._timing_so_far(),
        }

    def on_load_checkpoint(self, checkpoint: dict) -> None:
        if "replay_buffer" in checkpoint and self.buffer is not None:
            self.buffer.load_state_dict(checkpoint["replay_buffer"])
        progress = checkpoint.get("sac_progress")
        if progress is not None:
            self.eval_history = [(int(s), float(r)) for s, r in progress["eval_history"]]
            layers = progress.get("train_routing", {})  # absent in checkpoints of older versions
            self.train_routing = RoutingSummary({name: LayerSummary(**s) for name, s in layers.items()})
            self._timing = dict(progress["timing"])

    def configure_optimizers(self):
        hp = self.hparams
        actor_opt = torch.optim.AdamW(self.actor.parameters(), lr=hp.lr, weight_decay=hp.weight_decay, fused=True)
        critic_opt = torch.optim.AdamW(self.critic.parameters(), lr=hp.lr, weight_decay=hp.weight_decay, fused=True)
        temp_opt = torch.optim.Adam([self.log_alpha], lr=hp.lr, fused=True)
        return [actor_opt, critic_opt, temp_opt]

    # ----------------------------------------------------------------------------------------------- acting
    def normalize(self, obs: Tensor) -> Tensor:
        return self.obs_norm(obs) if self.hparams.normalize_observations else obs

    @torch.no_grad()
    def act(self, obs: np.ndarray, deterministic: bool) -> np.ndarray:
        """One action in [-1, 1] for one raw observation: a policy sample, or ``tanh(mean)`` when deterministic.

        The actor runs in eval mode: acting is not a training forward of its gate (no gate noise, and one acting
        state does not count as a batch for a router's load balancing, e.g. sigmoid_bias's bias step)."""
        was_training = self.actor.training
        self.actor.eval()
        try:
            mean, log_std, _ = self.actor(self.normalize(torch.as_tensor(obs, dtype=torch.float32)[None]))
        finally:
            self.actor.train(was_training)
        action = torch.tanh(mean) if deterministic else tanh_normal_sample(mean, log_std)[0]
        return action[0].numpy()

    @torch.no_grad()
    def evaluate(self, episodes: int) -> list[float]:
        """Returns of ``episodes`` greedy episodes on the evaluation environment."""
        returns = []
        for _ in range(episodes):
            obs, _ = self.eval_env.reset()
            total, done = 0.0, False
            while not done:
                obs, reward, terminated, truncated, _ = self.eval_env.step(self.act(obs, deterministic=True))
                total += reward
                done = terminated or truncated
            returns.append(total)
        return returns

    # ----------------------------------------------------------------------------------------------- updates
    def critic_names(self) -> list[str]:
        """Names of the critics' gates in routings and summaries: "critic", or "critic.i" for an ensemble."""
        n = len(self.critic.critics)
        return ["critic"] if n == 1 else [f"critic.{i}" for i in range(n)]

    def loss_and_routing(self, batch: Batch) -> tuple[Tensor, dict[str, Routing]]:
        """``L_pi + L_Q`` of one replay batch at the current weights and every gate's routing, without stepping
        (what ``zoo.moe.testing.check_router_step`` checks; an update steps each loss with its own optimiser)."""
        losses, routing = sac_update(self, batch)
        return losses["actor_loss"] + losses["critic_loss"], routing

    def update(self, batch: Batch) -> UpdateOutput:
        """One ``sac_update`` with the agent's optimisers; its gates' routings (detached) join the training summary."""
        start = time.perf_counter()
        losses, routing = sac_update(self, batch, self.optimizers())
        routing = {name: r.detach() for name, r in routing.items()}
        if routing:
            self.train_routing.add(routing)
        self._timing["update_s"] += time.perf_counter() - start
        self._timing["updates"] += 1
        return UpdateOutput(losses, routing)

    # ----------------------------------------------------------------------------------------------- loop
    def env_steps(self) -> int:
        return int(self.agent_steps) * self.dm.action_repeat

    def _log_to_loggers(self, metrics: dict[str, float]) -> None:
        # x-axis = environment steps (what the SimBa curves use), not the optimiser-step count
        for logger in self.loggers:
            logger.log_metrics(metrics, step=self.env_steps())

    def on_train_start(self) -> None:
        self._fit_start, self._fit_start_steps = time.perf_counter(), self.env_steps()

    def on_train_batch_start(self, batch, batch_idx: int) -> int | None:
        # The budget is the step counter, not the batch index: a resumed run's dataloader starts again at 0.
        return -1 if int(self.agent_steps) >= self.dm.agent_steps else None

    def training_step(self, step, batch_idx: int) -> dict | None:
        """One agent step (act, store, ``updates_per_step`` updates once the buffer holds ``learning_starts``).
        Returns ``{"loss": critic loss, "routing": {gate: Routing}}`` of the step's last update, None before the
        first update (or a dense network's ``{"loss": ...}`` without routing)."""
        hp = self.hparams
        obs = torch.as_tensor(self._obs, dtype=torch.float32)
        if hp.normalize_observations:
            self.obs_norm.update(obs[None])
        if int(self.agent_steps) < hp.learning_starts:
            action = (torch.rand(self.act_dim) * 2.0 - 1.0).numpy()
        else:
            action = self.act(self._obs, deterministic=False)
        next_obs, reward, terminated, truncated, _ = self.env.step(action)
        self.buffer.add(self._obs, action, reward, next_obs, terminated)
        self._episode_return += reward
        self._obs = next_obs
        self.agent_steps += 1
        if terminated or truncated:
            self._log_to_loggers({"train/episode_return": self._episode_return})
            self._obs, _ = self.env.reset()
            self._episode_return = 0.0

        result = None
        if len(self.buffer) >= hp.learning_starts and hp.updates_per_step > 0:
            for _ in range(hp.updates_per_step):
                losses, routing = self.update(self.buffer.sample(hp.batch_size))
            if int(self.agent_steps) % hp.log_every == 0:
                metrics = {f"train/{k}": float(v.detach()) for k, v in losses.items()}
                metrics["train/temperature"] = float(self.log_alpha.detach().exp())
                self._log_to_loggers(metrics)
            result = {"loss": losses["critic_loss"].detach()} | ({"routing": routing} if routing else {})

        env_steps = self.env_steps()
        if self.dm.eval_every and env_steps % self.dm.eval_every == 0:
            mean_return = float(np.mean(self.evaluate(self.dm.eval_episodes)))
            self.eval_history.append((env_steps, mean_return))
            self._log_to_loggers({"val/return": mean_return})
            self.log("val/return", mean_return, on_step=True, on_epoch=False, logger=False, batch_size=1)
        return result

    def _timing_so_far(self) -> dict:
        """``_timing`` with the fit in progress (since ``on_train_start``) added to its time and env steps."""
        timing = dict(self._timing)
        if self._fit_start is not None:
            timing["fit_s"] += time.perf_counter() - self._fit_start
            timing["fit_env_steps"] += self.env_steps() - self._fit_start_steps
        return timing

    def on_train_end(self) -> None:
        self._timing, self._fit_start = self._timing_so_far(), None
        self.plot_returns()

    def test_step(self, batch, batch_idx: int) -> None:
        returns = self.evaluate(self.dm.eval_episodes)
        self.log("test/return", float(np.mean(returns)), batch_size=1)
        self.log("test/return_std", float(np.std(returns)), batch_size=1)

    # ----------------------------------------------------------------------------------------------- reporting
    def _out_dir(self) -> str | None:
        if self._trainer is None:
            return None
        return self.trainer.log_dir or self.trainer.default_root_dir

    def plot_returns(self) -> str | None:
        """Write ``returns.png`` (evaluation return vs environment steps) into the run's log folder."""
        out = self._out_dir()
        if not self.eval_history or out is None:
            return None
        plt = pyplot()
        steps, returns = zip(*self.eval_history)
        fig, ax = plt.subplots(figsize=(5, 3.2))
        ax.plot(steps, returns, marker="o")
        ax.set(
            xlabel="environment steps",
            ylabel=f"mean return ({self.dm.eval_episodes} episodes)",
            title=f"{self.hparams.architecture} on {self.dm.env}",
            ylim=(0, 1000),
        )
        ax.grid(alpha=0.3)
        return save_figure(fig, os.path.join(out, "returns.png"), dpi=100)

    def parameter_counts(self) -> dict[str, int]:
        """Total and per-state active parameters of actor and critic (one critic of the ensemble)."""
        counts = {}
        for name, net in (("actor", self.actor), ("critic", self.critic.critics[0])):
            total = sum(p.numel() for p in net.parameters())
            active = total
            if hasattr(net, "router"):
                experts = sum(p.numel() for p in net.experts.parameters())
                active = total - experts + experts * net.router.top_k // net.num_experts
            counts[f"{name}_total"], counts[f"{name}_active"] = total, active
        return counts

    @torch.no_grad()
    def routing_report(self, num_states: int = 1024) -> dict:
        """Routing of every gate for the record: ``zoo.moe.routing_summary`` of the final gates on ``num_states``
        replayed states (router entropy, load, load entropy, dead experts), plus ``training_load``, the expert
        load over all updates (the accumulated ``train_routing``)."""
        if not hasattr(self.actor, "router") or self.buffer is None or len(self.buffer) == 0:
            return {}
        obs = self.normalize(self.buffer.sample(num_states).obs)
        routers = [self.actor.router] + [c.router for c in self.critic.critics]
        names = ["actor", *self.critic_names()]
        modes = [router.training for router in routers]
        for router in routers:  # the deployed gates: no routing noise, no balancing-bias step while measuring
            router.eval()
        report = routing_summary({name: router(obs) for name, router in zip(names, routers)}).to_dict()
        for router, mode in zip(routers, modes):
            router.train(mode)
        for name, stats in report.items():
            trained = self.train_routing.layers.get(name)
            stats["training_load"] = trained.load if trained is not None else []
        return report

    def extra_results(self) -> dict:
        """Run diagnostics stored in the leaderboard record: speed, parameters, evaluation curve, routing."""
        t = self._timing
        return {
            "architecture": self.hparams.architecture,
            "env_steps": self.env_steps(),
            "updates": t["updates"],
            "updates_per_s": t["updates"] / t["update_s"] if t["update_s"] else None,
            "env_steps_per_s": t["fit_env_steps"] / t["fit_s"] if t["fit_s"] else None,
            "train_time_s": t["fit_s"],
            "params": self.parameter_counts(),
            "eval_curve": [[s, r] for s, r in self.eval_history],
            "returns_png": os.path.join(self._out_dir(), "returns.png")
            if self.eval_history and self._out_dir()
            else None,
            "routing": self.routing_report(),
        }
