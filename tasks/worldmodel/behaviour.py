"""Behaviour policies that generate the WestWorld trajectories: scripted noise and trained SAC agents.

Names (``policies`` of the datamodule and `zoo_tasks.worldmodel.generate`):
    uniform:   a_t ~ U[-1, 1] independently per step;
    ou:        temporally correlated noise, a_t = clip(rho a_{t-1} + sqrt(1 - rho^2) sigma eps_t), rho 0.9, sigma 0.6;
    sac@<N>:   the stochastic policy of a SAC agent (`zoo_tasks.rl.sac.SACAgent`, the same agent as the RL task's)
               after N agent steps of training on the robot's own env and reward (issue 20: "trained SAC policies at
               a few checkpoints").

A robot's agent is trained once, to the largest N any requested policy needs, and its actor is saved at every
requested N (``agents/<robot>/sac@<N>.pt``). ``AGENT`` is plain SAC with MLPs as the SimBa reference's baseline
(``configs/scalemoe/mlp.yaml``: two 256-unit layers, clipped double-Q, Adam 3e-4, no weight decay) with SimBa's
temperature settings (initial temperature 0.01, target entropy -|A|/2), one update per agent step and 1000 random
steps first (the baseline's temperature 1 learned nothing within 10k steps on cheetah-run; the measurement is in
``leaderboard/notes/westworld.md``). Training runs on one torch thread inside
``torch.random.fork_rng`` with a seed of its own, so it neither depends on nor changes the caller's thread count or
random state, and re-running it on the same machine writes the same weights.
"""

from __future__ import annotations

import contextlib
import logging
import re
import warnings
import zlib
from pathlib import Path

import numpy as np
import torch

from zoo.errors import ConfigError

SCRIPTED = ("uniform", "ou")
SAC_SNAPSHOTS = (2500, 5000, 10000)
DEFAULT_POLICIES = (*SCRIPTED, *(f"sac@{n}" for n in SAC_SNAPSHOTS))
OU_RHO, OU_SIGMA = 0.9, 0.6
AGENT = dict(
    architecture="mlp", actor_hidden=256, critic_hidden=256, num_q=2, normalize_observations=False, lr=3e-4,
    weight_decay=0.0, initial_temperature=0.01, target_entropy_coef=-0.5, batch_size=256, updates_per_step=1,
    learning_starts=1000,
)  # fmt: skip
_SAC = re.compile(r"sac@([1-9][0-9]*)")


def sac_steps(policy: str) -> int | None:
    """N of ``"sac@N"``; None for a scripted policy; ConfigError naming the choices for anything else."""
    if policy in SCRIPTED:
        return None
    match = _SAC.fullmatch(policy)
    if match is None:
        raise ConfigError(
            f"policies: unknown behaviour policy {policy!r}; valid: {', '.join(SCRIPTED)}, or 'sac@<agent steps>' "
            f"(e.g. {DEFAULT_POLICIES[-1]!r})"
        )
    return int(match.group(1))


def agent_seed(robot_name: str) -> int:
    return zlib.crc32(f"{robot_name}/sac-agent".encode()) & 0x7FFFFFFF


@contextlib.contextmanager
def _one_thread_own_rng_quiet(seed: int):
    """One torch thread, a forked RNG seeded with ``seed``, no Lightning banner or warnings; all restored."""
    threads = torch.get_num_threads()
    banner = logging.getLogger("pytorch_lightning.utilities.rank_zero")
    level = banner.level
    with torch.random.fork_rng(devices=[]), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.manual_seed(seed)
        torch.set_num_threads(1)
        banner.setLevel(logging.WARNING)
        try:
            yield
        finally:
            torch.set_num_threads(threads)
            banner.setLevel(level)


def _make_agent(settings: dict, obs_dim: int, act_dim: int):
    from zoo_tasks.rl.sac import SACAgent

    agent = SACAgent(**settings, checkpoint_every_s=0)
    agent.build(obs_dim, act_dim)
    return agent


def train_agent(robot_name: str, steps: list[int], out_dir: Path, settings: dict | None = None) -> dict[int, dict]:
    """Train ``robot_name``'s SAC agent to ``max(steps)`` agent steps and save its actor after each of ``steps``
    (``out_dir / f"sac@{n}.pt"``, written atomically). Returns ``{n: {"file", "greedy_return"}}``: the return of
    one greedy evaluation episode at that snapshot, to show how far each stage has learned."""
    import pytorch_lightning as pl

    from zoo_tasks.rl.data import DMControlDataModule
    from zoo_tasks.rl.sac import SACAgent
    from zoo_tasks.worldmodel.robots import robot

    settings = dict(AGENT if settings is None else settings)
    spec, wanted, saved = robot(robot_name), set(steps), {}
    out_dir.mkdir(parents=True, exist_ok=True)

    class _Snapshots(pl.Callback):
        def on_train_batch_end(self, trainer, agent, outputs, batch, batch_idx) -> None:
            n = int(agent.agent_steps)
            if n in wanted and n not in saved:
                path = out_dir / f"sac@{n}.pt"
                tmp = path.with_suffix(".tmp")
                torch.save(
                    {"settings": settings, "obs_dim": agent.obs_dim, "act_dim": agent.act_dim, "agent_steps": n,
                     "actor": agent.actor.state_dict(), "obs_norm": agent.obs_norm.state_dict()}, tmp,
                )  # fmt: skip
                tmp.replace(path)
                saved[n] = {"file": path.name, "greedy_return": float(agent.evaluate(1)[0])}

    seed = agent_seed(robot_name)
    with _one_thread_own_rng_quiet(seed):
        data = DMControlDataModule(
            env=spec.env, action_repeat=spec.action_repeat, env_steps=max(wanted) * spec.action_repeat,
            eval_every=0, eval_episodes=1, seed=seed,
        )  # fmt: skip
        trainer = pl.Trainer(
            accelerator="cpu", devices=1, max_epochs=1, logger=False, enable_checkpointing=False,
            enable_progress_bar=False, enable_model_summary=False, callbacks=[_Snapshots()],
        )  # fmt: skip
        trainer.fit(SACAgent(**settings, checkpoint_every_s=0), datamodule=data)
    missing = sorted(wanted - set(saved))
    if missing:
        raise RuntimeError(f"{robot_name}: SAC training ended before agent step(s) {missing}")
    return saved


class BehaviourPolicy:
    """One episode stream of a behaviour policy: ``reset()`` at each episode start, then ``act(obs)`` per step
    returns an action (act_dim,) float32 in [-1, 1]. Scripted policies ignore ``obs``; a SAC snapshot samples
    from its actor with a torch generator of its own (``seed``), so rollouts never touch the global RNG."""

    def __init__(self, policy: str, act_dim: int, seed: int, snapshot: Path | None = None):
        self.kind, self.act_dim = policy, act_dim
        self.rng = np.random.default_rng(seed)
        self.prev = np.zeros(act_dim)
        self.agent = None
        if sac_steps(policy) is not None:
            if snapshot is None:
                raise ConfigError(f"policy {policy!r} needs its trained agent's snapshot file")
            state = torch.load(snapshot, map_location="cpu", weights_only=True)
            with torch.random.fork_rng(devices=[]):  # the initial weights are overwritten: keep the caller's RNG
                self.agent = _make_agent(state["settings"], state["obs_dim"], state["act_dim"])
            self.agent.actor.load_state_dict(state["actor"])
            self.agent.obs_norm.load_state_dict(state["obs_norm"])
            self.generator = torch.Generator().manual_seed(seed)

    def reset(self) -> None:
        self.prev = self.rng.uniform(-1, 1, self.act_dim) if self.kind == "ou" else np.zeros(self.act_dim)

    @torch.no_grad()
    def act(self, obs: np.ndarray) -> np.ndarray:
        if self.kind == "uniform":
            return self.rng.uniform(-1.0, 1.0, self.act_dim).astype(np.float32)
        if self.kind == "ou":
            noise = self.rng.normal(0.0, OU_SIGMA, self.act_dim)
            self.prev = np.clip(OU_RHO * self.prev + np.sqrt(1 - OU_RHO**2) * noise, -1.0, 1.0)
            return self.prev.astype(np.float32)
        agent = self.agent
        policy = agent.actor.eval()(agent.normalize(torch.as_tensor(obs, dtype=torch.float32)[None]))
        eps = torch.randn(policy.mean.shape, generator=self.generator)
        return torch.tanh(policy.mean + policy.log_std.exp() * eps)[0].numpy().astype(np.float32)
