"""Forecasting data (tasks/timeseries/data.py): split borders follow the SOURCE.md conventions, the scaler sees
train rows only, test windows are never dropped, users' own CSVs load, and a bad CSV is one ConfigError line that
names the file and the problem."""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch
from zoo_testing import REPO, run_zoo

from zoo.errors import ConfigError
from zoo_tasks.timeseries.data import ForecastingDataModule, WindowDataset, read_series, split_borders
from zoo_tasks.timeseries.spec import SEER


def test_ett_hour_borders_match_source_md():
    # SOURCE.md: border1s=[0, 12*30*24 - seq_len, 12*30*24 + 4*30*24 - seq_len],
    #            border2s=[12*30*24, 12*30*24 + 4*30*24, 12*30*24 + 8*30*24]
    b = split_borders(17420, 96, "ett_hour")
    assert b == {"train": (0, 8640), "val": (8640 - 96, 11520), "test": (11520 - 96, 14400)}


def test_ett_minute_borders_are_four_times_the_hourly_ones():
    b = split_borders(69680, 96, "ett_minute")
    assert b == {"train": (0, 34560), "val": (34560 - 96, 46080), "test": (46080 - 96, 57600)}


def test_ratio_borders_match_dataset_custom():
    n = 52696  # weather.csv rows
    num_train, num_test = int(n * 0.7), int(n * 0.2)
    b = split_borders(n, 96, "ratio_7_1_2")
    assert b == {"train": (0, num_train), "val": (num_train - 96, n - num_test), "test": (n - num_test - 96, n)}


def test_unknown_split_and_short_file_are_clear_errors():
    with pytest.raises(ConfigError, match="choose one of"):
        split_borders(1000, 96, "random")
    with pytest.raises(ConfigError, match="at least"):
        split_borders(1000, 96, "ett_hour")
    with pytest.raises(ConfigError, match="choose one of"):
        ForecastingDataModule(split="80/20")
    with pytest.raises(ConfigError, match="data.init_args.pred_len must be > 0, got -3"):
        ForecastingDataModule(pred_len=-3)
    with pytest.raises(ConfigError, match="data.init_args.num_workers"):
        ForecastingDataModule(num_workers=-1)
    with pytest.raises(ConfigError, match="shorter than seq_len \\+ pred_len = 7"):
        WindowDataset(np.zeros((5, 1), dtype=np.float32), seq_len=4, pred_len=3)


def test_window_dataset_pairs_lookback_with_the_following_rows():
    values = np.arange(20, dtype=np.float32).reshape(10, 2)
    ds = WindowDataset(values, seq_len=4, pred_len=3)
    assert len(ds) == 10 - 4 - 3 + 1
    x, y = ds[2]
    assert torch.equal(x[:, 0], torch.tensor([4.0, 6.0, 8.0, 10.0]))
    assert torch.equal(y[:, 0], torch.tensor([12.0, 14.0, 16.0]))


def test_etth1_scaler_fit_on_train_and_no_test_window_dropped(data_mirror):
    dm = ForecastingDataModule(
        file="ETTh1.csv", dataset="ETT-small", data_dir=str(data_mirror / "ETT-small"), pred_len=96, batch_size=64
    )
    dm.setup()
    raw, channels = read_series(data_mirror / "ETT-small" / "ETTh1.csv")
    assert channels == ["HUFL", "HULL", "MUFL", "MULL", "LUFL", "LULL", "OT"] and dm.num_channels == 7
    np.testing.assert_allclose(dm.mean, raw[:8640].mean(0), rtol=1e-5)
    np.testing.assert_allclose(dm.std, raw[:8640].std(0), rtol=1e-5)
    # the first test window starts seq_len rows before the test segment and is normalised with train stats
    x, y = dm.datasets["test"][0]
    np.testing.assert_allclose(x.numpy(), (raw[11520 - 96 : 11520] - dm.mean) / dm.std, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(y.numpy(), (raw[11520 : 11520 + 96] - dm.mean) / dm.std, rtol=1e-4, atol=1e-5)
    expected = (14400 - (11520 - 96)) - 96 - 96 + 1
    sizes = [xb.shape[0] for xb, _ in dm.test_dataloader()]
    assert sum(sizes) == expected == 2785 and sizes[-1] == 2785 % 64
    assert sum(xb.shape[0] for xb, _ in dm.val_dataloader()) == (11520 - (8640 - 96)) - 96 - 96 + 1
    assert all(xb.shape[0] == 64 for xb, _ in dm.train_dataloader())  # training drops only the ragged batch


def test_a_users_own_csv_loads(tmp_path):
    rows = 400
    dates = np.array([f"2020-01-01 {i:05d}" for i in range(rows)])
    values = np.random.default_rng(0).normal(size=(rows, 3)).astype(np.float32)
    lines = ["timestamp,a,b,c"] + [f"{d},{v[0]},{v[1]},{v[2]}" for d, v in zip(dates, values)]
    (tmp_path / "mine.csv").write_text("\n".join(lines) + "\n")
    dm = ForecastingDataModule(
        file="mine.csv",
        dataset=None,
        data_dir=str(tmp_path),
        split="ratio_7_1_2",
        seq_len=24,
        pred_len=12,
        batch_size=16,
        date_column="timestamp",
    )
    dm.setup()
    assert dm.num_channels == 3
    x, y = next(iter(dm.test_dataloader()))
    assert x.shape == (16, 24, 3) and y.shape == (16, 12, 3)
    with pytest.raises(ConfigError, match="date column"):
        ForecastingDataModule(file="mine.csv", dataset=None, data_dir=str(tmp_path), split="ratio_7_1_2").setup()


_BAD_CSVS = {
    "non_numeric": (
        "date,a,b\n2020-01-01,1.0,2.0\n2020-01-02,oops,3.0\n",
        "non-numeric value 'oops' in column 'a', data row 2",
    ),
    "ragged": ("date,a,b\n2020-01-01,1.0,2.0\n2020-01-02,1.0,3.0,4.0\n", "not a well-formed CSV.*line 3, saw 4"),
    "binary": (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00", "is a binary file, not a CSV"),
    "not_utf8": (b"date,a\n2020-01-01,\xe9\xff\xfe\n", "not a UTF-8 text CSV"),
    "empty": ("", "is empty"),
    "header_only": ("date,a,b\n", "has a header but no data rows"),
    "no_values": ("date\n2020-01-01\n", "no value columns"),
    "missing_cell": (
        "date,a,b\n2020-01-01,1.0,2.0\n2020-01-02,1.0\n",
        r"not finite \(first: NaN in column 'b', data row 2\); fill missing cells",
    ),
    "inf_cell": ("date,a,b\n2020-01-01,1.0,2.0\n2020-01-02,inf,3.0\n", r"first: inf in column 'a', data row 2"),
    "minus_inf_cell": ("date,a,b\n2020-01-01,-inf,2.0\n", r"first: -inf in column 'a', data row 1"),
    "float32_overflow": ("date,a,b\n2020-01-01,1.0,2.0\n2020-01-02,1.0,1e39\n", r"column 'b', data row 2.*float32"),
    "boolean": ("date,a\n2020-01-01,true\n", "non-numeric value 'True' in column 'a'"),
}


@pytest.mark.parametrize("kind", sorted(_BAD_CSVS))
def test_a_bad_csv_is_one_config_error_naming_the_file(tmp_path, kind):
    content, problem = _BAD_CSVS[kind]
    path = tmp_path / f"{kind}.csv"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    dm = ForecastingDataModule(file=path.name, dataset=None, data_dir=str(tmp_path), split="ratio_7_1_2")
    with pytest.raises(ConfigError, match=problem) as info:
        dm.setup()
    message = str(info.value)
    assert str(path) in message and "\n" not in message
    error = info.value  # no chained pandas traceback behind it
    assert error.__cause__ is None and (error.__context__ is None or error.__suppress_context__)


def test_a_missing_csv_names_the_path(tmp_path):
    dm = ForecastingDataModule(file="nope.csv", dataset=None, data_dir=str(tmp_path), split="ratio_7_1_2")
    with pytest.raises(ConfigError, match=f"no CSV at {tmp_path / 'nope.csv'}"):
        dm.setup()


@pytest.mark.slow(reason="zoo fit in a zoo process")
def test_zoo_fit_on_a_bad_csv_prints_one_short_error(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("date,a\n2020-01-01,1.0\n2020-01-02,oops\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    env.setdefault("OMP_NUM_THREADS", "1")
    cell = ["--data.init_args.dataset", "null", "--data.init_args.data_dir", str(tmp_path), "--data.init_args.file"]
    args = ["fit", "--config", str(SEER.config_path("seer.yaml")), *cell, "bad.csv"]
    out = run_zoo([*args, "--model.init_args.num_channels", "1", "--trainer.default_root_dir", "run"], env, tmp_path)
    assert out.returncode != 0
    assert "Traceback" not in out.stderr, out.stderr[-2000:]
    assert len([line for line in out.stderr.splitlines() if line.strip()]) <= 5, out.stderr
    assert f"{bad}: non-numeric value 'oops' in column 'a', data row 2" in out.stderr
