"""The environment side of a SPHERE run: a MetaWorld task sequence, its per-task budget, the rollout shape and the
evaluation protocol, as a LightningDataModule.

RL has no dataset: ``train_dataloader`` counts PPO iterations (one ``training_step`` = one rollout of
``num_envs x n_steps`` environment steps, then the PPO epochs on it) over the whole sequence; the agent keeps its
place (task, steps in it) in its own state and stops by it, so a resumed run whose loader starts again at 0 goes
on where it stopped. ``test_dataloader`` holds one item (``test_step`` reports the final success row).
"""

from __future__ import annotations

import pytorch_lightning as pl
import torch
from torch.utils.data import DataLoader

from zoo.errors import ConfigError
from zoo_tasks.rl.continual.metaworld_envs import CW10, check_tasks, make_vector_env


class MetaWorldSequenceDataModule(pl.LightningDataModule):
    """A continual-RL sequence of MetaWorld v3 tasks, trained one after the other.

    Args:
        tasks: task names in training order (short, ``"faucet-close"``, or full ``"faucet-close-v3"``); default
            CW10 in its order. Checked against MetaWorld's v3 goal-observable tasks.
        steps_per_task: environment steps of training per task (rounded up to whole rollouts).
        num_envs: parallel copies of the current task (each its own fixed goal).
        n_steps: steps per copy per rollout (SB3's ``n_steps``); a rollout is ``num_envs * n_steps`` steps.
        eval_episodes: episodes per task in each stage-end evaluation (success on every task of the sequence).
        eval_envs: copies evaluated side by side.
        vector: ``"sync"`` (one process) or ``"async"`` (a process per copy).
        eval_goals: ``"held_out"`` (evaluation copies have their own goals, as the reference's separate evaluation
            env) or ``"train"`` (the evaluation copies are seeded like the first ``eval_envs`` training copies:
            success on the goals the agent trained on).
        seed: environment seed; None takes ``torch.initial_seed()`` (the value ``seed_everything`` set).
    """

    def __init__(
        self,
        tasks: list[str] | None = None,
        steps_per_task: int = 1_000_000,
        num_envs: int = 8,
        n_steps: int = 256,
        eval_episodes: int = 10,
        eval_envs: int = 5,
        vector: str = "sync",
        eval_goals: str = "held_out",
        seed: int | None = None,
    ):
        super().__init__()
        self.tasks = check_tasks(list(CW10) if tasks is None else tasks)
        for key, value in (
            ("num_envs", num_envs),
            ("n_steps", n_steps),
            ("eval_episodes", eval_episodes),
            ("eval_envs", eval_envs),
        ):
            if value < 1:
                raise ConfigError(f"data.init_args.{key} must be >= 1, got {value}")
        if steps_per_task < 1:
            raise ConfigError(f"data.init_args.steps_per_task must be >= 1, got {steps_per_task}")
        if vector not in ("sync", "async"):
            raise ConfigError(f"data.init_args.vector must be 'sync' or 'async', got {vector!r}")
        if eval_goals not in ("held_out", "train"):
            raise ConfigError(f"data.init_args.eval_goals must be 'held_out' or 'train', got {eval_goals!r}")
        self.save_hyperparameters()
        self.eval_goals = eval_goals
        self.num_envs, self.n_steps, self.vector, self.seed = num_envs, n_steps, vector, seed
        self.eval_episodes, self.eval_envs = eval_episodes, eval_envs
        self.rollout_steps = num_envs * n_steps
        self.iterations_per_task = -(-steps_per_task // self.rollout_steps)
        self.steps_per_task = self.iterations_per_task * self.rollout_steps

    @property
    def iterations(self) -> int:
        return self.iterations_per_task * len(self.tasks)

    def env_seed(self) -> int:
        return self.seed if self.seed is not None else torch.initial_seed() % 2**31

    def train_envs(self, task_index: int):
        return make_vector_env(self.tasks[task_index], self.num_envs, self.env_seed(), vector=self.vector)

    def eval_envs_for(self, task_index: int):
        held_out = self.eval_goals == "held_out"
        return make_vector_env(self.tasks[task_index], self.eval_envs, self.env_seed(), evaluation=held_out)

    def train_dataloader(self) -> DataLoader:
        return DataLoader(range(self.iterations), batch_size=None)

    def test_dataloader(self) -> DataLoader:
        return DataLoader(range(1), batch_size=None)
