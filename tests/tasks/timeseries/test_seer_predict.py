"""``zoo predict`` on a SEER run: forecasts of ETTh1's test windows with their origin and target timestamps in the
file's own units (the true values are the file's cells), the normalised MSE / MAE the leaderboard's ``zoo test``
reports, the steps after the end of the series, a user's own CSV (the same preprocessing; a wrong channel count is
one line), and the Python API's load -> predict round trip equal to the file the command wrote."""

from __future__ import annotations

import csv

import numpy as np
import pytest
import torch
from zoo_testing import csv_rows, need_dataset, quiet_trainer, tiny_trained_run

from zoo.api import load_run, predict
from zoo.cli.main import main

SEQ_LEN, PRED_LEN, CHANNELS = 32, 8, 7  # the conformance case's windows (tasks/timeseries/spec.py)
TEST_START = 11520 - SEQ_LEN  # ETTh1's test segment (ett_hour borders) with its lookback
TRAIN_ROWS = 8640

pytestmark = pytest.mark.slow(reason="trains a tiny SEER run on ETTh1, then forecasts")


def read_rows(folder):
    return csv_rows(folder / "forecasts.csv")


def read_etth1():
    """(timestamps, values (rows, 7) float64, channel names) of the catalogue's ETTh1.csv."""
    with (need_dataset("ETT-small", files=["ETTh1.csv"]) / "ETTh1.csv").open() as fh:
        rows = list(csv.reader(fh))
    return [r[0] for r in rows[1:]], np.array([r[1:] for r in rows[1:]], dtype=np.float64), rows[0][1:]


def as_array(rows, key):
    """(windows, steps, channels) of a float column of the CSV, in its row order (window, step, channel)."""
    return np.array([float(r[key]) for r in rows]).reshape(-1, PRED_LEN, CHANNELS)


@pytest.fixture(scope="module")
def seer_run(tmp_path_factory):
    return tiny_trained_run("seer", "seer", tmp_path_factory.mktemp("seer"))


def test_forecasts_carry_timestamps_and_the_files_own_values_and_the_leaderboards_normalised_error(seer_run, capsys):
    out = seer_run / "predictions" / "cli"
    assert main(["predict", str(seer_run), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert f"wrote 2 files to {out}" in printed
    stamps, values, names = read_etth1()
    rows = read_rows(out)
    test_windows = 14400 - TEST_START - SEQ_LEN - PRED_LEN + 1
    windows = -(-test_windows // PRED_LEN)  # default stride pred_len: forecasts that tile the test split
    assert len(rows) == windows * PRED_LEN * CHANNELS
    assert [r["channel"] for r in rows[:CHANNELS]] == names
    first_file_rows = TEST_START + PRED_LEN * np.arange(windows)
    origins = first_file_rows + SEQ_LEN - 1
    assert [r["origin"] for r in rows[:: PRED_LEN * CHANNELS]] == [stamps[i] for i in origins]
    targets = origins[:, None] + 1 + np.arange(PRED_LEN)
    assert [r["target"] for r in rows[::CHANNELS]] == [stamps[i] for i in targets.reshape(-1)]
    assert [int(r["step"]) for r in rows[: PRED_LEN * CHANNELS : CHANNELS]] == list(range(1, PRED_LEN + 1))
    true = as_array(rows, "true")
    np.testing.assert_allclose(true, values[targets], rtol=1e-6)  # the file's own cells, not normalised ones
    forecast = as_array(rows, "forecast")
    assert np.isfinite(forecast).all()
    # the printed MSE is on the scale the datamodule z-scores with: the train rows' mean and std of each channel
    std = values[:TRAIN_ROWS].std(axis=0)
    mse = float((((forecast - true) / std) ** 2).mean())
    assert f"MSE {mse:.4f}" in printed
    assert (out / "forecast.png").stat().st_size > 10_000


def test_every_window_gives_the_test_mse_that_zoo_test_reports(seer_run):
    run = load_run(seer_run, overrides=["--data.init_args.batch_size=512"])  # the run's 3 makes zoo test slow
    prediction = predict(run, stride=1)
    assert prediction.outputs["forecast"].shape == (14400 - TEST_START - SEQ_LEN - PRED_LEN + 1, PRED_LEN, CHANNELS)
    (metrics,) = quiet_trainer().test(run.model, datamodule=run.datamodule, verbose=False)
    assert prediction.outputs["mse"] == pytest.approx(metrics["test/mse"], rel=1e-5)
    assert prediction.outputs["mae"] == pytest.approx(metrics["test/mae"], rel=1e-5)


def test_the_api_round_trip_equals_the_file_zoo_predict_wrote(seer_run):
    out = seer_run / "predictions" / "round-trip"
    options = ["--split", "val", "--stride", "3", "--windows", "5"]
    assert main(["predict", str(seer_run), *options, "--out", str(out)]) == 0
    prediction = predict(load_run(seer_run), split="val", stride=3, windows=5)
    rows = read_rows(out)
    np.testing.assert_array_equal(prediction.outputs["window"], [0, 3, 6, 9, 12])
    np.testing.assert_array_equal(as_array(rows, "forecast"), prediction.outputs["forecast"].astype(float))
    np.testing.assert_array_equal(as_array(rows, "true"), prediction.outputs["true"].astype(float))
    assert [r["origin"] for r in rows[:: PRED_LEN * CHANNELS]] == list(prediction.outputs["origin"])


def test_last_forecasts_the_steps_after_the_end_of_the_series(seer_run):
    out = seer_run / "predictions" / "last"
    assert main(["predict", str(seer_run), "--last", "true", "--out", str(out)]) == 0
    stamps, values, _ = read_etth1()
    rows = read_rows(out)
    assert len(rows) == PRED_LEN * CHANNELS
    assert {r["origin"] for r in rows} == {stamps[-1]} == {"2018-06-26 19:00:00"}
    assert [r["target"] for r in rows[::CHANNELS]] == [f"2018-06-26 {h}:00:00" for h in range(20, 24)] + [
        f"2018-06-27 0{h}:00:00" for h in range(4)
    ]
    assert {r["true"] for r in rows} == {""}
    history = predict(load_run(seer_run), last=True).outputs["history"][0]
    np.testing.assert_allclose(history, values[-SEQ_LEN:], rtol=1e-6)  # float32 of the cells


def test_a_users_own_csv_is_forecast_in_its_units_and_a_wrong_channel_count_is_one_line(seer_run, tmp_path, capsys):
    stamps, values, names = read_etth1()
    rows = 1500  # split 70/10/20 as every user CSV: test rows [1200 - 32, 1500)
    mine = tmp_path / "mine.csv"
    with (need_dataset("ETT-small", files=["ETTh1.csv"]) / "ETTh1.csv").open() as fh:
        mine.write_text("".join(next(fh) for _ in range(rows + 1)))
    out = tmp_path / "mine"
    assert main(["predict", str(seer_run), "--data.init_args.path", str(mine), "--out", str(out)]) == 0
    assert "of the test split of mine.csv" in capsys.readouterr().out
    written = read_rows(out)
    first = 1200 - SEQ_LEN
    assert written[0]["origin"] == stamps[first + SEQ_LEN - 1]
    assert [r["channel"] for r in written[:CHANNELS]] == names
    windows = len(written) // (PRED_LEN * CHANNELS)
    assert windows == -(-(rows - first - SEQ_LEN - PRED_LEN + 1) // PRED_LEN)
    targets = first + SEQ_LEN + PRED_LEN * np.arange(windows)[:, None] + np.arange(PRED_LEN)
    np.testing.assert_allclose(as_array(written, "true"), values[targets], rtol=1e-6)
    # the same preprocessing on the user's rows: z-scored with its own train rows (the first 70 %), then undone
    train = values[: int(rows * 0.7)]
    model = load_run(seer_run).model
    lookback = torch.from_numpy(((values[first : first + SEQ_LEN] - train.mean(0)) / train.std(0))[None]).float()
    with torch.no_grad():
        expected = model(lookback)[0].numpy() * train.std(0) + train.mean(0)
    np.testing.assert_allclose(as_array(written, "forecast")[0], expected, rtol=1e-4, atol=1e-4)

    three = tmp_path / "three.csv"
    three.write_text("".join(",".join(line.split(",")[:4]) + "\n" for line in mine.read_text().splitlines()))
    assert main(["predict", str(seer_run), "--data.init_args.path", str(three), "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "num_channels is 7" in err and "has 3" in err
    assert not (tmp_path / "x").exists()


def test_bad_options_are_one_line(seer_run, capsys):
    for option, message in (
        (["--split", "all"], "--split 'all': choose from train, val, test"),
        (["--stride", "0"], "--stride must be >= 1"),
        (["--windows", "-2"], "--windows must be >= 1"),
    ):
        assert main(["predict", str(seer_run), *option]) == 2
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and message in err
