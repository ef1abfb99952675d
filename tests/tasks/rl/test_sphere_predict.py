"""``zoo predict`` on a SPHERE (continual PPO) run: evaluation episodes of the mean action on its MetaWorld sequence
with return and success, every step's reward and action, a video of one episode; an episode is the run's own
evaluation protocol, and the Python API's load -> predict round trip equals the files the command wrote."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest
from zoo_testing import csv_rows, tiny_trained_run, video_frames

from zoo.api import load_run, predict
from zoo.cli.main import main

pytestmark = pytest.mark.slow(reason="trains a real SPHERE run before zoo predict")


@pytest.fixture(scope="module")
def sphere_run(tmp_path_factory):
    return tiny_trained_run("sphere", "sphere-sparse", tmp_path_factory.mktemp("sphere"))


@pytest.fixture(scope="module")
def written(sphere_run):
    out = sphere_run / "predictions" / "cli"
    assert main(["predict", str(sphere_run), "--episodes", "2", "--max_steps", "5", "--out", str(out)]) == 0
    return out


def test_zoo_predict_writes_success_and_return_per_episode_and_a_video(written):
    episodes, steps = csv_rows(written / "episodes.csv"), csv_rows(written / "trajectory.csv")
    # the case's sequence is [faucet-close], seed_everything 0: held-out evaluation goals 0 * 1000 + 500 + k
    assert [(e["task"], int(e["episode"]), int(e["goal_seed"])) for e in episodes] == [
        ("faucet-close", 0, 500),
        ("faucet-close", 1, 501),
    ]
    assert all(e["success"] in ("0", "1") and int(e["length"]) == 5 and e["end"] == "max_steps" for e in episodes)
    assert len(steps) == 10 and {s["task"] for s in steps} == {"faucet-close"}
    actions = np.array([[float(s[f"action_{i}"]) for i in range(4)] for s in steps])  # MetaWorld: 4 action dims
    assert np.all(np.abs(actions) <= 1)
    rewards = np.array([float(s["reward"]) for s in steps])
    assert np.all((rewards >= 0) & (rewards <= 10))  # MetaWorld v3 rewards lie in [0, 10]
    for e in episodes:
        k = int(e["episode"])
        assert float(e["return"]) == pytest.approx(rewards[5 * k : 5 * k + 5].sum())
    frames = video_frames(next(written.glob("episode.*")))
    assert frames.shape == (2, 120, 160, 3)  # the first state and step 4 (80 steps/s filmed at 20 fps)
    assert frames.std() > 10


def test_an_episode_is_the_runs_own_evaluation_episode(sphere_run):
    from zoo_tasks.rl.continual.metaworld_envs import evaluate_success

    run = load_run(sphere_run)
    envs = run.datamodule.eval_envs_for(0)  # the stage-end evaluation: evaluation copy 0, the mean action
    success, expected = evaluate_success(partial(run.model.greedy_action), envs, 1)
    envs.close()
    prediction = predict(run, episodes=1, video=False)
    assert prediction.outputs["returns"][0, 0] == pytest.approx(expected, abs=1e-9)
    assert prediction.outputs["success"][0, 0] == success


def test_the_api_round_trip_equals_the_files_zoo_predict_wrote(sphere_run, written):
    prediction = predict(load_run(sphere_run), episodes=2, max_steps=5, tasks=["faucet-close-v3"])
    episodes, steps = csv_rows(written / "episodes.csv"), csv_rows(written / "trajectory.csv")
    assert prediction.outputs["tasks"] == ["faucet-close"]
    np.testing.assert_allclose(prediction.outputs["returns"][0], [float(e["return"]) for e in episodes])
    np.testing.assert_array_equal(prediction.outputs["success"][0], [int(e["success"]) for e in episodes])
    written_actions = [[float(s[f"action_{i}"]) for i in range(4)] for s in steps]
    np.testing.assert_allclose(
        np.concatenate(prediction.outputs["actions"]["faucet-close"]), written_actions, rtol=1e-6
    )
    frames = prediction.outputs["frames"]  # rendered a second time in this process: still a scene, not a blank
    assert frames.shape == (2, 120, 160, 3) and frames.std() > 10


def test_bad_options_are_one_line(sphere_run, capsys):
    assert main(["predict", str(sphere_run), "--tasks", "[hammer]"]) == 2
    err = capsys.readouterr().err
    assert "pick tasks of the run's sequence: faucet-close" in err and err.strip().count("\n") == 0
    assert main(["predict", str(sphere_run), "--episodes", "0"]) == 2
    assert "--episodes must be >= 1" in capsys.readouterr().err
