"""zoo_tasks.rl.data: the environment and budget of a run; bad values fail when the config is read."""

import pytest

from zoo.errors import ConfigError
from zoo_tasks.rl.data import DMControlDataModule


def test_budget_is_counted_in_agent_steps():
    dm = DMControlDataModule("reacher-easy", action_repeat=2, env_steps=101, seed=5)
    assert dm.agent_steps == 50 and len(dm.train_dataloader()) == 50 and len(dm.test_dataloader()) == 1
    assert dm.env_seed() == 5
    env = dm.make_env(dm.env_seed())
    assert env.action_repeat == 2 and env.name == "reacher-easy"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(env="cheetah-walk"), r"unknown DeepMind Control task 'cheetah-walk'.*cheetah-run"),
        (dict(env_steps=1), r"env_steps=1 is less than one agent step \(action_repeat=2\)"),
        (dict(eval_episodes=0), "eval_episodes must be >= 1"),
    ],
)
def test_bad_settings_raise_config_errors(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        DMControlDataModule(**kwargs)
