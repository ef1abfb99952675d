"""``zoo predict`` on a WestWorld run: open-loop rollouts from test-set starts beside the true trajectories (CSV and
a rollout plot); the true column is the test data, the predictions do not read the future they predict, and the
Python API's load -> predict round trip equals the file the command wrote."""

from __future__ import annotations

import numpy as np
import pytest
from zoo_testing import csv_rows, tiny_trained_run

from zoo.api import load_run, predict
from zoo.cli.main import main

pytestmark = pytest.mark.slow(reason="trains a tiny WestWorld run, then rolls it out")

PREFIX, EPISODE_LEN, ROBOT = 3, 10, "dmc_cartpole"  # the conformance case's windows and robot


@pytest.fixture(scope="module")
def ww_run(tmp_path_factory):
    # two test episodes, so that two starts exist
    extra = ("--data.init_args.test_episodes=2",)
    return tiny_trained_run("westworld", "westworld", tmp_path_factory.mktemp("westworld"), extra=extra)


@pytest.fixture(scope="module")
def written(ww_run):
    out = ww_run / "predictions" / "cli"
    horizon = str(EPISODE_LEN - PREFIX)  # the whole episode after the prefix (the model trained on 4 steps)
    assert main(["predict", str(ww_run), "--starts", "2", "--horizon", horizon, "--out", str(out)]) == 0
    return out


def test_zoo_predict_writes_rollouts_beside_the_test_data_and_a_plot(ww_run, written):
    rows = csv_rows(written / "rollouts.csv")
    assert list(rows[0]) == ["robot", "start", "step", "dim", "predicted", "true"]
    dm = load_run(ww_run).datamodule
    dm.setup("test")
    data = dm.test_data[0]
    dims = np.flatnonzero(data.valid[: data.structure.obs_dim])
    keys = [(r["robot"], int(r["start"]), int(r["step"]), int(r["dim"])) for r in rows]
    assert keys == [(ROBOT, s, t, int(d)) for s in (0, 1) for t in range(PREFIX, EPISODE_LEN) for d in dims]
    true = np.array([data.episodes[s, t, d] for _, s, t, d in keys])
    np.testing.assert_allclose([float(r["true"]) for r in rows], true, rtol=1e-6)
    assert np.all(np.isfinite([float(r["predicted"]) for r in rows]))
    assert (written / f"rollout_{ROBOT}.png").stat().st_size > 5000


def test_the_rollouts_are_open_loop(ww_run):
    """Changing the test episodes' states after the prefix changes the true column, never the predictions."""
    run = load_run(ww_run)
    first = predict(run, starts=2)
    do = run.datamodule.test_data[0].structure.obs_dim
    run.datamodule.test_data[0].episodes[:, PREFIX:, :do] += 1.0  # the future the model must not read
    second = predict(run, starts=2)
    np.testing.assert_array_equal(second.outputs["predicted"][ROBOT], first.outputs["predicted"][ROBOT])
    np.testing.assert_allclose(second.outputs["true"][ROBOT], first.outputs["true"][ROBOT] + 1.0, rtol=1e-6)


def test_the_api_round_trip_equals_the_file_zoo_predict_wrote(ww_run, written):
    prediction = predict(load_run(ww_run), starts=2, horizon=EPISODE_LEN - PREFIX)
    rows = csv_rows(written / "rollouts.csv")
    pred = prediction.outputs["predicted"][ROBOT]  # (starts, horizon, Do)
    assert pred.shape[:2] == (2, EPISODE_LEN - PREFIX)
    expected = [pred[int(r["start"]), int(r["step"]) - PREFIX, int(r["dim"])] for r in rows]
    np.testing.assert_allclose([float(r["predicted"]) for r in rows], expected, rtol=1e-6)
    mae = np.mean([abs(float(r["predicted"]) - float(r["true"])) for r in rows])
    assert prediction.outputs["mae"][ROBOT] == pytest.approx(mae, rel=1e-5)


def test_bad_options_are_one_line(ww_run, capsys):
    assert main(["predict", str(ww_run), "--horizon", str(EPISODE_LEN - PREFIX + 1)]) == 2
    err = capsys.readouterr().err
    assert f"--horizon must be in 1..{EPISODE_LEN - PREFIX}" in err and err.strip().count("\n") == 0
    assert main(["predict", str(ww_run), "--starts", "0"]) == 2
    assert "--starts must be >= 1" in capsys.readouterr().err
