"""A user's own environment: any Gymnasium env with a continuous action space, behind the ``DMControlEnv`` interface.

Names (the data config's ``env`` key; DeepMind Control ``domain-task`` names are handled in ``envs``):

- ``gym:<id>``: a registered Gymnasium id, made with ``gymnasium.make(id)`` (e.g. ``gym:Pendulum-v1``; Gymnasium's
  own ``module:Id-v0`` form inside it imports ``module`` first, which registers its envs);
- ``<id>``: the same, without the prefix, when the id is registered (``Pendulum-v1``);
- ``package.module:EnvClass``: an entry point, a ``gymnasium.Env`` subclass or a factory called with no arguments.

Read from the env: the observation size (its space flattened to one float32 vector, ``gymnasium.spaces.flatten``),
the action size and bounds (the agent acts in [-1, 1], rescaled to the bounds as in ``DMControlEnv``) and the
episode end (``terminated`` stops bootstrapping, ``truncated`` does not). An env without a time limit gets
``DEFAULT_TIME_LIMIT`` control steps, the DeepMind Control episode length.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

import gymnasium as gym
import numpy as np

from zoo.errors import ConfigError

GYM_PREFIX = "gym:"
DEFAULT_TIME_LIMIT = 1000
FORMS = "a DeepMind Control task 'domain-task', a Gymnasium id 'gym:<id>' or an entry point 'package.module:EnvClass'"


def _key(name: str) -> str:
    return f"env {name!r} (data.init_args.env)"


def is_gym_name(name: str) -> bool:
    """Does ``name`` name a Gymnasium env (prefix, entry point or registered id) rather than a DMC task?"""
    return name.startswith(GYM_PREFIX) or ":" in name or name in gym.registry


def _factory(name: str) -> Callable[[], gym.Env]:
    """A no-argument constructor of the raw env ``name`` names; ConfigError when it names none."""
    if name.startswith(GYM_PREFIX) or ":" not in name:
        env_id = name.removeprefix(GYM_PREFIX)

        def make() -> gym.Env:
            try:
                return gym.make(env_id)
            except (gym.error.Error, ImportError) as exc:
                raise ConfigError(f"{_key(name)}: {exc}; it takes {FORMS}") from None

        return make
    module, _, attr = name.partition(":")
    try:
        target = getattr(importlib.import_module(module), attr)
    except ImportError as exc:
        raise ConfigError(f"{_key(name)}: cannot import module {module!r} ({exc}); it takes {FORMS}") from None
    except AttributeError:
        raise ConfigError(f"{_key(name)}: module {module!r} has no attribute {attr!r}") from None
    if not callable(target):
        raise ConfigError(f"{_key(name)}: {module}.{attr} is not a gymnasium.Env class or factory")
    return target


def _check_spaces(name: str, env: gym.Env) -> None:
    space = env.action_space
    if not isinstance(space, gym.spaces.Box):
        raise ConfigError(
            f"{_key(name)} has a {type(space).__name__} action space ({space}); SAC needs a continuous "
            "gymnasium.spaces.Box action space"
        )
    if not (np.all(np.isfinite(space.low)) and np.all(np.isfinite(space.high))):
        raise ConfigError(f"{_key(name)}: its Box action space has infinite bounds ({space}); SAC needs finite ones")
    try:
        gym.spaces.flatten_space(env.observation_space)
    except NotImplementedError:
        raise ConfigError(
            f"{_key(name)}: its observation space {env.observation_space} cannot be flattened into one vector"
        ) from None


class GymnasiumEnv(gym.Env):
    """A Gymnasium env with a Box action space, as the agent sees envs (Towers et al. 2024, arXiv 2407.17032).

    Spaces: observation Box (obs_dim,) float32, the env's observation space flattened; action Box (act_dim,) in
    [-1, 1], rescaled to the env's bounds (and reshaped to its action shape). ``step`` repeats the action
    ``action_repeat`` times and returns the summed reward. The first ``reset()`` uses ``seed``; later ones continue
    the env's RNG, as in ``DMControlEnv``.
    """

    metadata = {"render_modes": []}

    def __init__(self, name: str, seed: int = 0, action_repeat: int = 2):
        if action_repeat < 1:
            raise ConfigError(f"action_repeat must be >= 1, got {action_repeat}")
        self.name, self.action_repeat, self._seed = name, action_repeat, seed
        env = _factory(name)()
        if not isinstance(env, gym.Env):
            raise ConfigError(f"{_key(name)} made a {type(env).__name__}, not a gymnasium.Env")
        _check_spaces(name, env)
        if env.spec is None or env.spec.max_episode_steps is None:
            env = gym.wrappers.TimeLimit(env, DEFAULT_TIME_LIMIT)
        self._env = env
        self._obs_space = env.observation_space
        box = env.action_space
        self._shape, self._dtype = box.shape, box.dtype
        self._low, self._high = box.low.reshape(-1).astype(np.float64), box.high.reshape(-1).astype(np.float64)
        obs_dim = gym.spaces.flatdim(self._obs_space)
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, (obs_dim,), np.float32)
        self.action_space = gym.spaces.Box(-1.0, 1.0, (self._low.size,), np.float32)

    def _flat(self, obs) -> np.ndarray:
        return np.asarray(gym.spaces.flatten(self._obs_space, obs), dtype=np.float32)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        if seed is None and self._seed is not None:
            seed, self._seed = self._seed, None
        obs, info = self._env.reset(seed=seed, options=options)
        return self._flat(obs), info

    def step(self, action):
        action = np.clip(np.asarray(action, dtype=np.float64).reshape(-1), -1.0, 1.0)
        scaled = (self._low + (action + 1.0) * 0.5 * (self._high - self._low)).reshape(self._shape)
        scaled = scaled.astype(self._dtype)
        reward, terminated, truncated, info = 0.0, False, False, {}
        for _ in range(self.action_repeat):
            obs, r, terminated, truncated, info = self._env.step(scaled)
            reward += float(r)
            if terminated or truncated:
                break
        return self._flat(obs), reward, bool(terminated), bool(truncated), info

    def close(self) -> None:
        self._env.close()


def check_gym_env(name: str) -> tuple[int, int]:
    """Build ``name`` once (ConfigError for an unknown id, an entry point that does not import, a discrete or
    unbounded action space) and return its (observation size, action size)."""
    env = GymnasiumEnv(name, seed=0, action_repeat=1)
    try:
        return env.observation_space.shape[0], env.action_space.shape[0]
    finally:
        env.close()
