"""What a trained SEER / dense twin / PatchTST forecasts (``zoo predict``, ``zoo.api.predict``): the ``pred_len``
steps after each window of a split (or after the end of the series), with the origin and target timestamps, in the
data's original units, on the task's CSV or the user's own (``--data.init_args.path my.csv``: the same channels, in
the same order, as the run was trained on), and a picture of a few forecasts against their history.

:class:`~zoo_tasks.timeseries.data.ForecastingDataModule` z-scores every channel with the mean and standard deviation
of its train rows and the model forecasts on that scale; the files undo it (``value * std + mean``). The summary's
MSE / MAE are on the normalised scale, the one the leaderboard's ``test/mse`` and ``test/mae`` use.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import numpy as np
import torch

from zoo.errors import ConfigError
from zoo.predict import Prediction
from zoo.trained import TrainedRun
from zoo_tasks.timeseries.data import read_series, split_borders

SPLITS = ("train", "val", "test")
BATCH = 256  # windows per forward pass
PICTURE_WINDOWS, PICTURE_CHANNELS = 3, 3


def _check_options(split: str, windows: int | None, stride: int | None) -> None:
    if split not in SPLITS:
        raise ConfigError(f"--split {split!r}: choose from {', '.join(SPLITS)}")
    for name, value in (("windows", windows), ("stride", stride)):
        if value is not None and value < 1:
            raise ConfigError(f"--{name} must be >= 1 (or left out), got {value}")


def read_timestamps(path: Path, date_column: str) -> np.ndarray:
    """The date column of a CSV as text, one entry per data row (the rows ``read_series`` reads)."""
    import pandas as pd

    frame = pd.read_csv(path, usecols=[date_column], dtype=str, keep_default_na=False)
    return frame[date_column].to_numpy(dtype=object)


def following_timestamps(stamps: np.ndarray, count: int) -> list[str]:
    """``count`` timestamps after the last of ``stamps`` (dates, or integers counting steps), each the last two rows'
    gap apart; empty strings when those two are not increasing dates or integers (the date column is free text)."""
    import pandas as pd

    with contextlib.suppress(ValueError, TypeError, IndexError):  # a step counter (0, 1, 2, ...), not dates
        last, before = int(stamps[-1]), int(stamps[-2])
        return [str(last + (last - before) * (i + 1)) for i in range(count)] if last > before else [""] * count
    try:
        last, before = pd.Timestamp(stamps[-1]), pd.Timestamp(stamps[-2])
    except (ValueError, TypeError, IndexError):
        return [""] * count
    step = last - before
    if pd.isna(step) or step <= pd.Timedelta(0):
        return [""] * count
    return [str(last + step * (i + 1)) for i in range(count)]


def forecast(model: torch.nn.Module, lookback: np.ndarray) -> np.ndarray:
    """lookback (W, L, C) normalised -> forecast (W, H, C) normalised, ``BATCH`` windows at a time."""
    x = torch.from_numpy(np.ascontiguousarray(lookback, dtype=np.float32))
    with torch.no_grad():
        return torch.cat([model(x[i : i + BATCH]) for i in range(0, len(x), BATCH)]).numpy()


def _picture(history: np.ndarray, pred: np.ndarray, true: np.ndarray | None, origins, channels: list[str]):
    """``draw(path)``: a grid of a few windows (rows) x channels (columns), the lookback (grey), the true values
    (black, where known) and the forecast (red) against the step from the origin, in original units."""
    rows = np.unique(np.linspace(0, len(pred) - 1, min(PICTURE_WINDOWS, len(pred))).astype(int))
    cols = np.unique(np.linspace(0, len(channels) - 1, min(PICTURE_CHANNELS, len(channels))).astype(int))

    def draw(path: Path) -> None:
        from zoo.utils.figures import pyplot, save_figure

        plt = pyplot()
        seq_len, pred_len = history.shape[1], pred.shape[1]
        past, ahead = np.arange(1 - seq_len, 1), np.arange(1, pred_len + 1)
        fig, axes = plt.subplots(len(rows), len(cols), figsize=(3.6 * len(cols), 2.4 * len(rows)), squeeze=False)
        for ax_row, w in zip(axes, rows):
            for ax, c in zip(ax_row, cols):
                ax.plot(past, history[w, :, c], color="0.55", lw=0.9, label="history")
                if true is not None:
                    ax.plot(ahead, true[w, :, c], color="black", lw=0.9, label="true")
                ax.plot(ahead, pred[w, :, c], color="tab:red", lw=1.1, label="forecast")
                ax.axvline(0.5, color="0.8", lw=0.6)
                ax.set_title(f"{channels[c]} after {origins[w]}", fontsize=8)
                ax.tick_params(labelsize=6)
        axes[0, 0].legend(fontsize=6)
        fig.supxlabel("steps from the forecast origin", fontsize=8)
        save_figure(fig, path, dpi=110)

    return draw


def predict_forecasts(
    run: TrainedRun, split: str = "test", windows: int | None = None, stride: int | None = None, last: bool = False
) -> Prediction:
    """Forecasts of the ``pred_len`` steps after windows of ``split``, in the data's original units.

    split: train / val / test, the run's split of the CSV (``--data.init_args.path``: your own, split 70/10/20).
    stride: the steps between the windows written (default ``pred_len``: forecasts that tile the split; 1: every
        window, the set the leaderboard's ``test/mse`` averages over).
    windows: write only the first this many of those windows (default: all).
    last: instead, forecast the ``pred_len`` steps after the end of the series (no true values).

    Returns outputs ``forecast`` (W, H, C), ``true`` (W, H, C; None with ``last``), ``history`` (W, L, C) in
    original units, ``origin`` (W,) and ``target`` (W, H) timestamps, ``window`` (W,) indices into the split's
    windows (stride 1; None with ``last``), ``channels``, and ``mse`` / ``mae`` on the normalised scale.
    """
    _check_options(split, windows, stride)
    dm = run.datamodule
    dm.setup("test")
    hp = dm.hparams
    seq_len, pred_len = hp.seq_len, hp.pred_len
    path = dm.csv_path()
    stamps = read_timestamps(path, hp.date_column)
    values, channels = read_series(path, hp.date_column, hp.columns)  # the rows the datamodule scaled
    if last:
        index = None
        history = values[-seq_len:][None]
        pred = forecast(run.model, (history - dm.mean) / dm.std)
        true, origins, targets = None, np.array([stamps[-1]], dtype=object), [following_timestamps(stamps, pred_len)]
    else:
        dataset = dm.datasets[split]
        index = np.arange(0, len(dataset), stride or pred_len)[:windows]
        lookback = np.stack([dataset[i][0].numpy() for i in index])
        scaled_true = np.stack([dataset[i][1].numpy() for i in index])
        pred = forecast(run.model, lookback)
        rows = split_borders(len(values), seq_len, dm.split)[split][0] + index  # each window's first file row
        history = values[rows[:, None] + np.arange(seq_len)]
        target_rows = rows[:, None] + seq_len + np.arange(pred_len)
        true, origins, targets = values[target_rows], stamps[rows + seq_len - 1], stamps[target_rows]
    errors = None if last else pred - scaled_true
    original = pred * dm.std + dm.mean
    table = [
        {
            "origin": origins[w],
            "target": targets[w][h],
            "step": h + 1,
            "channel": name,
            "forecast": float(original[w, h, c]),
            "true": "" if true is None else float(true[w, h, c]),
        }
        for w in range(len(original))
        for h in range(pred_len)
        for c, name in enumerate(channels)
    ]
    mse = None if errors is None else float(np.mean(errors**2))
    mae = None if errors is None else float(np.mean(np.abs(errors)))
    if last:
        end = f"the {pred_len} steps after {stamps[-1]} (the end of {path.name})"
        summary = [f"forecast of {end}, {len(channels)} channels, in the data's original units"]
    else:
        apart = "every window" if (stride or pred_len) == 1 else f"windows {stride or pred_len} steps apart"
        summary = [
            f"{len(original)} windows of the {split} split of {path.name} ({apart}), {pred_len} steps x "
            f"{len(channels)} channels, in the data's original units",
            f"MSE {mse:.4f}, MAE {mae:.4f} on the normalised scale the leaderboard uses (each channel z-scored with "
            "its train rows' mean and std; its test/mse averages every test window: --stride 1)",
        ]
    outputs = {
        "forecast": original,
        "true": true,
        "history": history,
        "origin": origins,
        "target": np.asarray(targets, dtype=object),
        "window": index,
        "channels": channels,
        "mse": mse,
        "mae": mae,
    }
    picture = _picture(history, original, true, origins, channels)
    return Prediction(outputs=outputs, tables={"forecasts": table}, pictures={"forecast.png": picture}, summary=summary)


PREDICTORS = {"SEERForecaster": predict_forecasts, "PatchTSTForecaster": predict_forecasts}
