"""The DeepMind Control Suite as a ``gymnasium.Env``: physics only (no rendering), flat observations, action repeat.

``DMControlEnv("cartpole-swingup", seed=0, action_repeat=2)`` loads ``dm_control.suite.load("cartpole",
"swingup")``; an episode is the suite's 1000 control steps, i.e. 500 agent steps at action repeat 2, and ends
with ``truncated=True`` (the suite's tasks never terminate, their time limit is a truncation). Rewards of the
repeated steps are summed, so episode returns are on the suite's usual 0-1000 scale. Actions are in [-1, 1]
and rescaled to the task's action bounds, as in SimBa (Lee et al., ICLR 2025) and DrQ.
"""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np

from zoo.errors import ConfigError
from zoo_tasks.rl.gym_envs import FORMS, GymnasiumEnv, check_gym_env, is_gym_name


def _suite():
    with warnings.catch_warnings():  # dm_control imports glfw, which warns without a display; we never render
        warnings.simplefilter("ignore")
        from dm_control import suite
    return suite


def is_dmc_name(name: str) -> bool:
    domain, _, task = name.partition("-")
    return (domain, task) in _suite().ALL_TASKS


def split_env_name(name: str) -> tuple[str, str]:
    """``"cartpole-swingup"`` -> ``("cartpole", "swingup")``; an unknown task raises ConfigError naming the choices."""
    if not is_dmc_name(name):
        known = ", ".join(f"{d}-{t}" for d, t in _suite().ALL_TASKS)
        raise ConfigError(
            f"unknown DeepMind Control task {name!r} (and no registered Gymnasium id of that name); "
            f"data.init_args.env takes {FORMS}; DeepMind Control tasks: {known}"
        )
    domain, _, task = name.partition("-")
    return domain, task


def check_env_name(name: str) -> None:
    """ConfigError unless ``name`` is a DeepMind Control task or a usable Gymnasium env (which is built once)."""
    if is_dmc_name(name):
        return
    if is_gym_name(name):
        check_gym_env(name)
        return
    split_env_name(name)


def flatten_observation(observation: dict) -> np.ndarray:
    """dm_control's OrderedDict of arrays -> one float32 vector (keys in the suite's fixed order)."""
    return np.concatenate([np.asarray(v, dtype=np.float32).reshape(-1) for v in observation.values()])


class DMControlEnv(gym.Env):
    """A DeepMind Control Suite task (Tassa et al. 2018, arXiv 1801.00690) behind the gymnasium API.

    Spaces: observation Box (obs_dim,) float32 (the flattened observation dict); action Box (act_dim,) in
    [-1, 1]. ``step`` repeats the action ``action_repeat`` times and returns the summed reward.
    ``reset(seed=s)`` reloads the task with ``task_kwargs={"random": s}``; ``reset()`` continues its RNG.
    """

    metadata = {"render_modes": []}

    def __init__(self, name: str, seed: int = 0, action_repeat: int = 2):
        if action_repeat < 1:
            raise ConfigError(f"action_repeat must be >= 1, got {action_repeat}")
        self.name, self.action_repeat = name, action_repeat
        self._domain, self._task = split_env_name(name)
        self._load(seed)
        spec = self._env.action_spec()
        self._low, self._high = spec.minimum.astype(np.float32), spec.maximum.astype(np.float32)
        obs_dim = flatten_observation(self._env.reset().observation).shape[0]
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, (obs_dim,), np.float32)
        self.action_space = gym.spaces.Box(-1.0, 1.0, spec.shape, np.float32)

    def _load(self, seed: int) -> None:
        self._env = _suite().load(self._domain, self._task, task_kwargs={"random": seed})

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        if seed is not None:
            self._load(seed)
        return flatten_observation(self._env.reset().observation), {}

    def step(self, action):
        action = np.clip(np.asarray(action, dtype=np.float32), -1.0, 1.0)
        scaled = self._low + (action + 1.0) * 0.5 * (self._high - self._low)
        reward, terminated, truncated = 0.0, False, False
        for _ in range(self.action_repeat):
            ts = self._env.step(scaled)
            reward += ts.reward or 0.0
            if ts.last():
                # dm_env marks a true terminal state with discount 0; the suite's time limit keeps discount 1
                terminated, truncated = ts.discount == 0.0, ts.discount != 0.0
                break
        return flatten_observation(ts.observation), float(reward), bool(terminated), bool(truncated), {}


def make_env(name: str, seed: int = 0, action_repeat: int = 2) -> DMControlEnv | GymnasiumEnv:
    """The env ``name`` names (the one entry point the agent and the benchmark use): a ``DMControlEnv`` for a
    DeepMind Control task, else a ``GymnasiumEnv`` (see ``zoo_tasks.rl.gym_envs`` for the accepted names)."""
    if is_dmc_name(name) or not is_gym_name(name):  # an unknown name gets the DMC error, which lists the tasks
        return DMControlEnv(name, seed=seed, action_repeat=action_repeat)
    return GymnasiumEnv(name, seed=seed, action_repeat=action_repeat)
