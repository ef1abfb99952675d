"""zoo_tasks.rl.envs: the DeepMind Control Suite behind gymnasium (flat observations, action repeat, seeding)."""

import numpy as np
import pytest

from zoo.errors import ConfigError
from zoo_tasks.rl.envs import make_env, split_env_name


def test_dmc_env_flattens_observations_and_repeats_actions():
    env = make_env("cartpole-swingup", seed=0, action_repeat=2)
    obs, _ = env.reset()
    assert obs.shape == env.observation_space.shape == (5,) and obs.dtype == np.float32
    assert env.action_space.shape == (1,)
    steps, total = 0, 0.0
    while True:
        obs, reward, terminated, truncated, _ = env.step(env.action_space.sample())
        steps, total = steps + 1, total + reward
        assert 0.0 <= reward <= 2.0  # two control steps, each rewarded in [0, 1]
        if terminated or truncated:
            break
    assert (steps, terminated, truncated) == (500, False, True)  # 1000 control steps, a time limit
    assert 0.0 < total < 1000.0


def test_dmc_env_reset_with_seed_is_reproducible():
    env = make_env("reacher-easy", seed=3)
    first, _ = env.reset(seed=7)
    second, _ = env.reset(seed=7)
    np.testing.assert_array_equal(first, second)
    third, _ = env.reset(seed=8)
    assert not np.array_equal(first, third)


def test_bad_names_and_repeats_raise_config_errors_naming_the_choices():
    assert split_env_name("walker-walk") == ("walker", "walk")
    with pytest.raises(ConfigError, match=r"unknown DeepMind Control task 'cartpole-swingupp'.*cartpole-swingup"):
        make_env("cartpole-swingupp")
    with pytest.raises(ConfigError, match="unknown DeepMind Control task 'walker'"):
        split_env_name("walker")  # a domain without its task
    with pytest.raises(ConfigError, match="action_repeat must be >= 1"):
        make_env("cartpole-swingup", action_repeat=0)
