"""``zoo predict`` on a ScaleMoE (SAC) run: evaluation episodes of the deterministic policy on cartpole-swingup, every
step's reward and action, a video of the first episode rendered from the physics; the episodes are the agent's own
evaluation episodes, and the Python API's load -> predict round trip equals the files the command wrote."""

from __future__ import annotations

import numpy as np
import pytest
from zoo_testing import csv_rows, tiny_trained_run, video_frames

from zoo.api import load_run, predict
from zoo.cli.main import main

pytestmark = pytest.mark.slow(reason="trains a real SAC run before zoo predict")

ACTION_REPEAT = 2  # the conformance case's cartpole-swingup: DMC rewards in [0, 1] per control step, summed


@pytest.fixture(scope="module")
def sac_run(tmp_path_factory):
    return tiny_trained_run("scalemoe", "scalemoe-output", tmp_path_factory.mktemp("sac"))


@pytest.fixture(scope="module")
def written(sac_run):
    out = sac_run / "predictions" / "cli"
    assert main(["predict", str(sac_run), "--episodes", "2", "--max_steps", "6", "--out", str(out)]) == 0
    return out


def test_zoo_predict_writes_episodes_their_steps_and_a_video_of_the_first(written):
    episodes, steps = csv_rows(written / "episodes.csv"), csv_rows(written / "trajectory.csv")
    assert [(int(e["episode"]), int(e["length"]), e["end"]) for e in episodes] == [
        (0, 6, "max_steps"),
        (1, 6, "max_steps"),
    ]
    assert [(int(s["episode"]), int(s["step"])) for s in steps] == [(e, t) for e in range(2) for t in range(6)]
    rewards = np.array([float(s["reward"]) for s in steps])
    assert np.all((rewards >= 0) & (rewards <= ACTION_REPEAT))
    actions = np.array([[float(s["action_0"])] for s in steps])  # cartpole: one action dim
    assert np.all(np.abs(actions) <= 1) and "action_1" not in steps[0]
    for e in episodes:  # an episode's return is the sum of its rewards
        assert float(e["return"]) == pytest.approx(rewards[6 * int(e["episode"]) : 6 * int(e["episode"]) + 6].sum())
    video = next(written.glob("policy.*"))
    frames = video_frames(video)
    assert frames.shape == (4, 120, 160, 3)  # the first state, then every 2nd step (50 steps/s filmed at 25 fps)
    assert frames.std() > 10 and np.abs(frames[-1].astype(int) - frames[0]).max() > 0  # a scene, and it moves


def test_an_episode_is_the_agents_own_evaluation_episode(sac_run):
    run = load_run(sac_run)
    run.model.eval_env = run.datamodule.make_env(3)  # what SACAgent.evaluate steps: the greedy policy
    expected = run.model.evaluate(1)
    prediction = predict(run, episodes=1, seed=3, video=False)
    assert prediction.outputs["lengths"][0] == 500  # a whole DMC episode: 1000 control steps at action repeat 2
    assert prediction.outputs["returns"][0] == pytest.approx(expected[0], abs=1e-9)


def test_the_api_round_trip_equals_the_files_zoo_predict_wrote(sac_run, written):
    prediction = predict(load_run(sac_run), episodes=2, max_steps=6)
    steps = csv_rows(written / "trajectory.csv")
    np.testing.assert_allclose(
        prediction.outputs["returns"], [float(e["return"]) for e in csv_rows(written / "episodes.csv")]
    )
    np.testing.assert_allclose(np.concatenate(prediction.outputs["rewards"]), [float(s["reward"]) for s in steps])
    np.testing.assert_allclose(
        np.concatenate(prediction.outputs["actions"])[:, 0], [float(s["action_0"]) for s in steps], rtol=1e-6
    )
    frames = prediction.outputs["frames"]  # rendered a second time in this process: still a scene, not a blank
    assert frames.shape == (4, 120, 160, 3) and frames.std() > 10
    other = predict(load_run(sac_run), episodes=2, max_steps=6, seed=1, video=False)
    assert not np.allclose(other.outputs["returns"], prediction.outputs["returns"])  # another seed, other episodes


def test_bad_options_are_one_line(sac_run, capsys):
    assert main(["predict", str(sac_run), "--episodes", "0"]) == 2
    err = capsys.readouterr().err
    assert "--episodes must be >= 1" in err and err.strip().count("\n") == 0
    assert main(["predict", str(sac_run), "--max_steps", "0"]) == 2
    assert "--max_steps must be >= 1" in capsys.readouterr().err
