"""zoo_tasks.rl.gym_envs: a user's own Gymnasium env (registered id or entry point) trains through the CLI with
only the env override; its sizes come from the env; a discrete, unknown or non-importable env is one ConfigError."""

import textwrap

import numpy as np
import pytest
import torch

from zoo.errors import ConfigError
from zoo_tasks.rl.data import DMControlDataModule
from zoo_tasks.rl.envs import make_env
from zoo_tasks.rl.gym_envs import DEFAULT_TIME_LIMIT, GymnasiumEnv
from zoo_tasks.rl.spec import QUICK

TOY_ENV = textwrap.dedent(
    '''
    import gymnasium as gym
    import numpy as np


    class Toy(gym.Env):
        """Observation Box (2, 2); action Box (2,) in [-1, 3] x [0, 10]; never ends by itself."""

        observation_space = gym.spaces.Box(-1.0, 1.0, (2, 2), np.float32)
        action_space = gym.spaces.Box(np.array([-1.0, 0.0]), np.array([3.0, 10.0]), dtype=np.float64)

        def reset(self, *, seed=None, options=None):
            super().reset(seed=seed)
            return self.np_random.uniform(-1, 1, (2, 2)).astype(np.float32), {}

        def step(self, action):
            self.last_action = action
            return np.zeros((2, 2), np.float32), 1.0, False, False, {}


    class Choice(Toy):
        action_space = gym.spaces.Discrete(3)
    '''
)


@pytest.fixture
def toy_module(tmp_path, monkeypatch):
    (tmp_path / "zoo_user_toy_env.py").write_text(TOY_ENV)
    monkeypatch.syspath_prepend(str(tmp_path))
    return "zoo_user_toy_env"


def test_entry_point_env_is_flattened_rescaled_repeated_and_time_limited(toy_module):
    env = make_env(f"{toy_module}:Toy", seed=3, action_repeat=2)
    assert isinstance(env, GymnasiumEnv)
    assert env.observation_space.shape == (4,) and env.action_space.shape == (2,)
    first, _ = env.reset()
    again, _ = GymnasiumEnv(f"{toy_module}:Toy", seed=3).reset()
    assert first.dtype == np.float32 and first.shape == (4,) and np.array_equal(first, again)  # seeded first reset
    _, reward, terminated, truncated, _ = env.step(np.array([1.0, -1.0]))
    assert reward == 2.0 and not terminated and not truncated  # two repeats, rewards summed
    assert np.allclose(env._env.unwrapped.last_action, [3.0, 0.0])  # [-1, 1] -> the env's bounds
    steps, truncated = 1, False
    while not truncated:
        steps, truncated = steps + 1, env.step(np.zeros(2))[3]
    assert steps == DEFAULT_TIME_LIMIT // 2  # an env without a time limit gets the DMC episode length


def test_registered_id_sizes_come_from_the_env():
    dm = DMControlDataModule("gym:Pendulum-v1", env_steps=10, seed=0)
    env = dm.make_env(dm.env_seed())
    assert env.observation_space.shape == (3,) and env.action_space.shape == (1,)
    assert make_env("Pendulum-v1").observation_space.shape == (3,)  # a registered id needs no prefix


@pytest.mark.slow(reason="a zoo fit through the CLI")
def test_a_gymnasium_env_trains_through_the_cli(tmp_path, monkeypatch, capsys):
    from zoo.cli.main import main

    monkeypatch.chdir(tmp_path)
    tiny = [*QUICK, "--model.init_args.actor_hidden=16", "--model.init_args.critic_hidden=16"]
    assert main(["fit", "--task", "scalemoe", "--data.init_args.env=gym:Pendulum-v1", *tiny]) == 0
    (ckpt,) = tmp_path.glob("runs/scalemoe/*/*/checkpoints/last.ckpt")
    state = torch.load(ckpt, weights_only=True)["state_dict"]
    assert int(state["agent_steps"]) == 200  # 400 env steps at action repeat 2
    assert state["obs_norm.mean"].shape == (3,)  # Pendulum's observation, read from the env
    assert float(state["obs_norm.count"]) > 199 and state["obs_norm.mean"].abs().sum() > 0  # every state seen
    (summary,) = tmp_path.glob("runs/scalemoe/*/*/lightning_logs/version_0/routing_summary.json")
    assert '"train"' in summary.read_text()  # the MoE gates routed during the updates
    assert "zoo: fit done" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ("gym:CartPole-v1", r"env 'gym:CartPole-v1' \(data.init_args.env\) has a Discrete action space"),
        ("{toy}:Choice", r"has a Discrete action space \(Discrete\(3\)\); SAC needs a continuous"),
        ("gym:NoSuchEnv-v0", r"env 'gym:NoSuchEnv-v0' \(data.init_args.env\): Environment `NoSuchEnv` doesn't exist"),
        ("no_such_module_xyz:Env", r"cannot import module 'no_such_module_xyz'.*'gym:<id>'"),
        ("{toy}:Missing", r"module 'zoo_user_toy_env' has no attribute 'Missing'"),
        ("cheetah-walk", r"unknown DeepMind Control task 'cheetah-walk'.*'gym:<id>'.*cheetah-run"),
    ],
)
def test_unusable_envs_are_one_config_error(toy_module, env, message):
    with pytest.raises(ConfigError, match=message):
        DMControlDataModule(env.format(toy=toy_module))


def test_the_cli_prints_one_line_for_a_discrete_env(tmp_path, monkeypatch, capsys):
    from zoo.cli.main import main

    monkeypatch.chdir(tmp_path)
    assert main(["fit", "--task", "scalemoe", "--data.init_args.env=gym:CartPole-v1"]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert err[-1].startswith("zoo: error: env 'gym:CartPole-v1'") and "Traceback" not in "\n".join(err)
