"""The environment side of an RL run as a LightningDataModule: which environment, how many steps.

RL has no dataset: ``train_dataloader`` is a step counter (agent step indices 0..N-1, one per ``training_step``,
in which the agent acts once and updates), ``test_dataloader`` holds one item (``test_step`` runs the final
evaluation episodes). The module reads the task, the action repeat and the evaluation schedule from here, which
keeps the configs' ``model`` (agent) / ``data`` (environment and budget) split.
"""

from __future__ import annotations

import pytorch_lightning as pl
import torch
from torch.utils.data import DataLoader

from zoo.errors import ConfigError
from zoo_tasks.rl.envs import DMControlEnv, check_env_name, make_env
from zoo_tasks.rl.gym_envs import GymnasiumEnv


class DMControlDataModule(pl.LightningDataModule):
    """An environment (a DeepMind Control Suite task, or the user's own Gymnasium env) and its interaction budget.

    Args:
        env: ``"<domain>-<task>"``, e.g. ``"cartpole-swingup"`` (checked against ``dm_control.suite.ALL_TASKS``);
            or a Gymnasium env with a continuous action space: ``"gym:<registered id>"`` (``"gym:Pendulum-v1"``)
            or an entry point ``"package.module:EnvClass"`` (see ``zoo_tasks.rl.gym_envs``). Its observation and
            action sizes are read from the env; the agent has no shape arguments.
        action_repeat: control steps per agent step (SimBa: 2).
        env_steps: training budget in environment (control) steps; ``env_steps // action_repeat`` agent steps.
        eval_every: evaluate every this many environment steps (``val/return``); 0 disables intermediate ones.
        eval_episodes: episodes per evaluation, also for the final ``test/return``.
        seed: environment seed; None takes ``torch.initial_seed()`` (the value ``seed_everything`` set).
    """

    def __init__(
        self,
        env: str = "cartpole-swingup",
        action_repeat: int = 2,
        env_steps: int = 50_000,
        eval_every: int = 10_000,
        eval_episodes: int = 10,
        seed: int | None = None,
    ):
        super().__init__()
        check_env_name(env)  # an unknown or unusable env fails here, when the config is read
        if env_steps < action_repeat:
            raise ConfigError(f"env_steps={env_steps} is less than one agent step (action_repeat={action_repeat})")
        if eval_episodes < 1:
            raise ConfigError(f"eval_episodes must be >= 1, got {eval_episodes}")
        self.save_hyperparameters()
        self.env, self.action_repeat, self.env_steps = env, action_repeat, env_steps
        self.eval_every, self.eval_episodes, self.seed = eval_every, eval_episodes, seed

    @property
    def agent_steps(self) -> int:
        return self.env_steps // self.action_repeat

    def env_seed(self) -> int:
        return self.seed if self.seed is not None else torch.initial_seed() % 2**31

    def make_env(self, seed: int) -> DMControlEnv | GymnasiumEnv:
        return make_env(self.env, seed=seed, action_repeat=self.action_repeat)

    def train_dataloader(self) -> DataLoader:
        return DataLoader(range(self.agent_steps), batch_size=None)

    def test_dataloader(self) -> DataLoader:
        return DataLoader(range(1), batch_size=None)
