"""SPHERE's MetaWorld task sequence: task names are checked when the config is read, every copy of a task has its
own seeded goal, success is read at an episode's last step, the continual metrics follow Continual World."""

import numpy as np
import pytest

from zoo.errors import ConfigError
from zoo_tasks.rl.continual.data import MetaWorldSequenceDataModule
from zoo_tasks.rl.continual.metaworld_envs import (
    CW10,
    check_tasks,
    env_id,
    evaluate_success,
    finished_successes,
    make_vector_env,
)
from zoo_tasks.rl.continual.metrics import average_final_success, forgetting, stage_success


def test_cw10_is_metaworld_v3_in_continual_world_order():
    assert check_tasks(list(CW10)) == CW10
    assert CW10[0] == "hammer" and CW10[-1] == "peg-unplug-side" and len(CW10) == 10
    assert env_id("hammer") == env_id("hammer-v3") == "hammer-v3-goal-observable"


@pytest.mark.parametrize(
    "tasks, message",
    [
        ([], "non-empty list"),
        (["hammer", "fly"], r"unknown MetaWorld v3 task\(s\) \['fly'\]"),
        (["push", "push"], "twice"),
    ],
)
def test_bad_task_lists_name_the_key(tasks, message):
    with pytest.raises(ConfigError, match=message):
        MetaWorldSequenceDataModule(tasks=tasks)


def test_bad_budgets_name_the_key():
    with pytest.raises(ConfigError, match="data.init_args.num_envs"):
        MetaWorldSequenceDataModule(tasks=["push"], num_envs=0)
    with pytest.raises(ConfigError, match="vector"):
        MetaWorldSequenceDataModule(tasks=["push"], vector="threads")


def test_budget_rounds_up_to_whole_rollouts():
    dm = MetaWorldSequenceDataModule(tasks=["push", "hammer"], steps_per_task=1000, num_envs=4, n_steps=64)
    assert dm.rollout_steps == 256 and dm.iterations_per_task == 4 and dm.steps_per_task == 1024
    assert len(dm.train_dataloader()) == 8


def test_copies_have_their_own_goals_and_evaluation_copies_differ_from_training():
    train, again = make_vector_env("push", 3, seed=1), make_vector_env("push", 3, seed=1)
    evaluation = make_vector_env("push", 3, seed=1, evaluation=True)
    goals = train.reset()[0][:, -3:]
    assert np.array_equal(goals, again.reset()[0][:, -3:])  # reproducible from the seed
    assert len({tuple(g) for g in goals}) == 3  # each copy its own goal
    assert not np.array_equal(goals, evaluation.reset()[0][:, -3:])
    assert train.single_observation_space.shape == (39,) and train.single_action_space.shape == (4,)
    for envs in (train, again, evaluation):
        envs.close()


def test_evaluation_on_the_training_goals_reuses_the_training_seeds():
    dm = MetaWorldSequenceDataModule(tasks=["push"], num_envs=3, eval_envs=2, eval_goals="train", seed=4)
    train, evaluation = dm.train_envs(0), dm.eval_envs_for(0)
    assert np.array_equal(train.reset()[0][:2, -3:], evaluation.reset()[0][:, -3:])
    train.close()
    evaluation.close()
    with pytest.raises(ConfigError, match="eval_goals"):
        MetaWorldSequenceDataModule(tasks=["push"], eval_goals="all")


def test_success_is_read_from_the_finished_episodes_last_info():
    info = {"final_info": {"success": np.array([0.0, 1.0, 1.0])}}
    done = finished_successes(np.array([False, False, False]), np.array([True, False, True]), info)
    assert done == [(0, False), (2, True)]
    assert finished_successes(np.zeros(3, bool), np.zeros(3, bool), {}) == []


def test_evaluation_counts_whole_500_step_episodes():
    envs = make_vector_env("handle-press-side", 2, seed=0, evaluation=True)
    calls = []

    def policy(obs):
        calls.append(obs.shape)
        return np.zeros((obs.shape[0], 4))

    success, ret = evaluate_success(policy, envs, episodes=2)
    envs.close()
    assert len(calls) == 500 and calls[0] == (2, 39)  # two copies side by side, one episode each
    assert 0.0 <= success <= 1.0 and ret > 0


def test_continual_world_metrics_of_a_known_matrix():
    m = [[0.8, 0.0, 0.1], [0.4, 0.9, 0.0], [0.2, 0.6, 1.0]]
    assert average_final_success(m) == pytest.approx(0.6)
    assert forgetting(m) == pytest.approx(((0.8 - 0.2) + (0.9 - 0.6)) / 2)
    assert stage_success(m) == [0.8, 0.9, 1.0]
    assert forgetting([[0.5]]) is None and forgetting(m[:2]) is None
