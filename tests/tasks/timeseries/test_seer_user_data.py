"""A user's own forecasting CSV (tasks/timeseries/data.py, ``path``): read as is with no catalog lookup, its
sha256 recorded, its channel count given by ``model_shapes()`` from the header alone, split chronologically
70/10/20, and trained through ``zoo fit`` with the base SEER config and nothing but the path and tiny-run flags;
an infinite cell, or a series too short for 8 validation and test windows, is refused in one line."""

from __future__ import annotations

import hashlib
import math

import numpy as np
import pytest
import torch

from zoo.errors import ConfigError
from zoo_tasks.timeseries.data import MIN_EVAL_WINDOWS, ForecastingDataModule, rows_for_eval_windows
from zoo_tasks.timeseries.spec import SEER

ROWS, CHANNELS = 1200, 3  # 1200 rows: the 10 % validation segment holds 25 windows of 96 + 96 (8 are needed)


def _write_csv(path, rows=ROWS, names=("load", "temp", "wind")):
    t = np.arange(rows)
    values = np.stack([np.sin(t / (5 + 3 * i)) + 0.1 * i * t / rows for i in range(len(names))], axis=1)
    dates = np.datetime64("2024-01-01T00:00") + t.astype("timedelta64[h]")
    lines = ["date," + ",".join(names)]
    for date, row in zip(dates, values, strict=True):
        lines.append(f"{date.astype(str).replace('T', ' ')}," + ",".join(f"{v:.5f}" for v in row))
    path.write_text("\n".join(lines) + "\n")
    return values.astype(np.float32)


def test_user_csv_is_read_as_is_with_its_sha256_channels_and_a_70_10_20_split(tmp_path, monkeypatch):
    csv = tmp_path / "my.csv"
    values = _write_csv(csv)
    monkeypatch.setenv("ZOO_DATA_DIR", str(tmp_path / "nothing-here"))  # no catalog is consulted
    dm = ForecastingDataModule(path=str(csv), batch_size=8)  # the catalog defaults (ETT-small, ETTh1) are unused
    assert dm.model_shapes() == {"num_channels": CHANNELS}
    assert dm.datasets == {}  # the header was enough: nothing loaded yet
    assert dm.data_sha256() == {"my.csv": hashlib.sha256(csv.read_bytes()).hexdigest()}
    assert dm.split == "ratio_7_1_2"
    dm.setup()
    assert dm.channels == ["load", "temp", "wind"]
    lengths = {name: len(ds) for name, ds in dm.datasets.items()}
    # train rows [0, 840), val [840 - 96, 960), test [960 - 96, 1200); windows = rows - 96 - 96 + 1
    assert lengths == {"train": 840 - 191, "val": 216 - 191, "test": 336 - 191}
    x, y = dm.datasets["test"][0]
    mean, std = values[:840].mean(0), values[:840].std(0)
    assert torch.allclose(x[0], torch.from_numpy((values[864] - mean) / std), atol=1e-4)
    assert y.shape == (96, CHANNELS)


def test_a_column_selection_gives_the_channels_and_the_shape(tmp_path):
    csv = tmp_path / "my.csv"
    _write_csv(csv)
    dm = ForecastingDataModule(path=str(csv), columns=["wind", "load"])
    assert dm.model_shapes() == {"num_channels": 2}
    dm.setup()
    assert dm.channels == ["wind", "load"] and dm.datasets["train"][0][0].shape == (96, 2)
    with pytest.raises(ConfigError, match=r"data.init_args.columns \['rain'\].*'load', 'temp', 'wind'"):
        ForecastingDataModule(path=str(csv), columns=["rain"]).model_shapes()


def test_catalog_files_keep_their_split_and_a_missing_path_is_one_line(tmp_path):
    assert ForecastingDataModule().split == "ett_hour"
    assert ForecastingDataModule(file="ETTm2.csv").split == "ett_minute"
    assert ForecastingDataModule(dataset="weather", file="weather.csv").split == "ratio_7_1_2"
    assert ForecastingDataModule(path="x.csv", split="ett_hour").split == "ett_hour"  # stated: kept
    with pytest.raises(ConfigError, match=r"data.init_args.path: no CSV file at .*missing.csv"):
        ForecastingDataModule(path=str(tmp_path / "missing.csv")).model_shapes()
    (tmp_path / "nodate.csv").write_text("time,a\n1,2\n")
    with pytest.raises(ConfigError, match=r"no date column 'date'; columns are \['time', 'a'\]"):
        ForecastingDataModule(path=str(tmp_path / "nodate.csv")).model_shapes()


def test_zoo_fit_trains_seer_on_a_user_csv_given_only_its_path(tmp_path, monkeypatch):
    from zoo.cli.main import main

    csv = tmp_path / "my.csv"
    _write_csv(csv)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ZOO_DATA_DIR", str(tmp_path / "nothing-here"))
    run = tmp_path / "run"
    code = main(
        [
            "fit",
            *("--config", str(SEER.config_path(SEER.default_config))),
            *("--data.init_args.path", str(csv)),
            *("--trainer.max_epochs", "1", "--trainer.limit_train_batches", "2", "--trainer.limit_val_batches", "1"),
            *("--trainer.enable_progress_bar", "false", "--trainer.default_root_dir", str(run)),
        ]
    )
    assert code in (0, None)
    checkpoints = sorted(run.rglob("*.ckpt"))
    assert checkpoints, list(run.rglob("*"))
    state = torch.load(checkpoints[-1], map_location="cpu", weights_only=False)
    assert state["hyper_parameters"]["num_channels"] == CHANNELS  # read from the CSV's header
    assert state["global_step"] == 2
    assert state["state_dict"]["net.revin.weight"].shape == (CHANNELS,)
    assert all(math.isfinite(v.float().abs().sum()) for v in state["state_dict"].values())


def test_a_stated_channel_count_that_contradicts_the_csv_is_one_error(tmp_path, monkeypatch, capsys):
    from zoo.cli.main import main

    csv = tmp_path / "my.csv"
    _write_csv(csv)
    monkeypatch.chdir(tmp_path)
    config = str(SEER.config_path(SEER.default_config))
    args = ["fit", "--config", config, "--data.init_args.path", str(csv), "--model.init_args.num_channels", "7"]
    assert main([*args, "--trainer.default_root_dir", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert "model.init_args.num_channels is 7" in err and "3" in err and "Traceback" not in err


def _fit(csv, run, *extra):
    from zoo.cli.main import main

    config = str(SEER.config_path(SEER.default_config))
    flags = (
        "--trainer.max_epochs",
        "1",
        "--trainer.limit_train_batches",
        "1",
        "--trainer.enable_progress_bar",
        "false",
    )
    return main(
        [
            "fit",
            "--config",
            config,
            "--data.init_args.path",
            str(csv),
            *flags,
            *extra,
            "--trainer.default_root_dir",
            str(run),
        ]
    )


def _one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def _set_cell(csv, row, column, text):
    """Write ``text`` into data row ``row`` (1-based), value column ``column`` (1-based) of ``csv``."""
    lines = csv.read_text().splitlines()
    cells = lines[row].split(",")
    cells[column] = text
    lines[row] = ",".join(cells)
    csv.write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize("cell", ["inf", "-inf"])
def test_an_infinite_cell_is_refused_naming_the_file_column_and_row(tmp_path, cell):
    csv = tmp_path / "my.csv"
    _write_csv(csv)
    _set_cell(csv, 6, 2, cell)
    message = rf"{csv}: 1 value\(s\) are not finite \(first: {cell} in column 'temp', data row 6\)"
    with pytest.raises(ConfigError, match=message):
        ForecastingDataModule(path=str(csv)).setup()


@pytest.mark.parametrize("cell", ["inf", "-inf"])
def test_zoo_fit_on_a_csv_with_an_infinite_cell_ends_in_one_line(tmp_path, monkeypatch, capsys, cell):
    csv = tmp_path / "my.csv"
    _write_csv(csv)
    _set_cell(csv, 4, 1, cell)
    monkeypatch.chdir(tmp_path)
    assert _fit(csv, tmp_path / "run") == 2
    line = _one_line(capsys.readouterr().err)
    assert f"{csv}: 1 value(s) are not finite (first: {cell} in column 'load', data row 4)" in line


def test_a_series_too_short_for_8_validation_windows_is_refused_naming_seq_len_pred_len_and_the_counts(
    tmp_path, monkeypatch, capsys
):
    """970 rows with the default 96 / 96 leave 2 validation windows (and 99 test windows): refused before
    training, in one line that gives the counts, the minimum and what to change."""
    csv = tmp_path / "weekly.csv"
    _write_csv(csv, rows=970)
    monkeypatch.chdir(tmp_path)
    assert _fit(csv, tmp_path / "run") == 2
    line = _one_line(capsys.readouterr().err)
    assert f"{csv}: data.init_args.seq_len 96 + pred_len 96 leave 2 validation and 99 test windows" in line
    assert f"fewer than the minimum of {MIN_EVAL_WINDOWS} each" in line and "1014 rows" in line
    assert not list((tmp_path / "run").rglob("*.ckpt"))


def test_the_stated_row_count_is_the_fewest_that_give_8_validation_windows(tmp_path):
    rows = rows_for_eval_windows(96, 96)
    _write_csv(tmp_path / "enough.csv", rows=rows)
    dm = ForecastingDataModule(path=str(tmp_path / "enough.csv"))
    dm.setup()
    assert min(len(dm.datasets["val"]), len(dm.datasets["test"])) == MIN_EVAL_WINDOWS
    _write_csv(tmp_path / "short.csv", rows=rows - 1)
    with pytest.raises(ConfigError, match="leave 7 validation"):
        ForecastingDataModule(path=str(tmp_path / "short.csv")).setup()
    # a shorter horizon is the other way out, as the message says
    small = ForecastingDataModule(path=str(tmp_path / "short.csv"), pred_len=24)
    small.setup()
    assert len(small.datasets["val"]) >= MIN_EVAL_WINDOWS
