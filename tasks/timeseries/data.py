"""Long-term forecasting data: any CSV with a date column and numeric channels, cut into sliding windows.

A user's own series is one CSV (``path``): a header line, a date column (``date_column``, any text: it is
dropped) and one numeric column per channel, one row per time step in time order, no missing values. It is read
as is (no catalog lookup, no checksum; its sha256 is recorded with the run, see ``data_sha256``).

The split conventions are those of Informer / Autoformer / Time-Series-Library (see the ``SOURCE.md`` of
``ETT-small`` and ``weather``):

- ``"ett_hour"``: 12/4/4 months of hourly rows (30-day months), train ``[0, 8640)``, val ``[8640 - L, 11520)``,
  test ``[11520 - L, 14400)``; rows after month 20 are unused.
- ``"ett_minute"``: the same at 15-minute steps (every border times 4).
- ``"ratio_7_1_2"``: chronological 70 % / 10 % / 20 % (``Dataset_Custom``), with the val and test segments
  starting ``L`` rows early so that their first window has a full lookback.
- ``"auto"`` (the default): ``ett_hour`` / ``ett_minute`` for the catalog's ETTh* / ETTm* files, otherwise
  ``ratio_7_1_2`` -- every user CSV given by ``path`` and the catalog's Weather, as Time-Series-Library's
  ``Dataset_Custom`` does for non-ETT data.

The validation and test segments must each hold at least ``MIN_EVAL_WINDOWS`` (8) windows, or the run stops
before training (:func:`require_eval_windows`). Every value must be finite (:func:`zoo.data.finite.require_finite`).
The StandardScaler is fitted on the train rows only; metrics are computed on that normalised scale.
Evaluation loaders never drop the last batch (dropping it is a known bug that flatters published numbers).
"""

from __future__ import annotations

import csv
import hashlib
from pathlib import Path

import numpy as np
import pytorch_lightning as pl
import torch
from torch.utils.data import DataLoader, Dataset

from zoo.data import resolve
from zoo.data.finite import require_finite
from zoo.data.resumable import resumable_train_loader
from zoo.errors import ConfigError
from zoo.utils.text_file import require_text_file

SPLITS = ("ett_hour", "ett_minute", "ratio_7_1_2")
AUTO = "auto"
MIN_EVAL_WINDOWS = 8  # fewer validation or test windows than this is refused (require_eval_windows)
_STAGES = ("train", "val", "test")


def split_borders(num_rows: int, seq_len: int, convention: str) -> dict[str, tuple[int, int]]:
    """Row ranges ``[start, end)`` of the train / val / test segments (val and test include the lookback).

    A window starting at row ``i`` of a segment reads ``[i, i + seq_len)`` and predicts the next ``pred_len``
    rows, all inside the segment.
    """
    if convention in ("ett_hour", "ett_minute"):
        month = 30 * 24 * (4 if convention == "ett_minute" else 1)
        train_end, val_end, test_end = 12 * month, 16 * month, 20 * month
        if num_rows < test_end:
            raise ConfigError(f"split {convention!r} needs at least {test_end} rows, the file has {num_rows}")
    elif convention == "ratio_7_1_2":
        num_train, num_test = int(num_rows * 0.7), int(num_rows * 0.2)
        train_end, val_end, test_end = num_train, num_rows - num_test, num_rows
    else:
        raise ConfigError(f"unknown split convention {convention!r}; choose one of {', '.join(SPLITS)}")
    return {"train": (0, train_end), "val": (train_end - seq_len, val_end), "test": (val_end - seq_len, test_end)}


def _bad_cell(values, column: str) -> tuple[int, str]:
    """(1-based data row, value as text) of the first cell of ``column`` that does not parse as a number."""
    import pandas as pd

    column_values = values[column]
    parsed = pd.to_numeric(column_values, errors="coerce")
    position = int((parsed.isna() & column_values.notna()).to_numpy().argmax())
    return position + 1, str(column_values.iloc[position])


def read_header(path: Path, date_column: str = "date", columns: list[str] | None = None) -> list[str]:
    """The channel names a CSV gives (``columns``, checked against its header line, or every column but the date
    column), from its first line only.

    Raises:
        ConfigError: the file is missing or unreadable, has no header, no date column, no channel, or lacks a
            selected column.
    """
    path = Path(path)
    try:
        with path.open(newline="", encoding="utf-8") as f:
            header = next(csv.reader(f), None)
    except OSError as exc:
        raise ConfigError(f"cannot read the CSV {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path} is not a UTF-8 text CSV (is it a binary file?)") from None
    if not header:
        raise ConfigError(f"{path} is empty: expected a header line '{date_column},<channel>,...' and data rows")
    if date_column not in header:
        raise ConfigError(f"{path} has no date column {date_column!r}; columns are {header}")
    channels = [name for name in header if name != date_column]
    if columns is None:
        if not channels:
            raise ConfigError(f"{path} has no value columns besides {date_column!r}")
        return channels
    unknown = [c for c in columns if c not in channels]
    if unknown or not columns:
        raise ConfigError(
            f"data.init_args.columns {list(columns)} must name channels of {path}; its channels are {channels}"
        )
    return list(columns)


def read_series(
    path: Path, date_column: str = "date", columns: list[str] | None = None
) -> tuple[np.ndarray, list[str]]:
    """(rows, channels) float32 values and the channel names of a CSV; every non-date column must be numeric.

    ``columns`` selects (and orders) the channels to read; ``None`` reads every column but ``date_column``.

    Raises:
        ConfigError: one line naming ``path`` and what is wrong with it: missing, binary, empty, ragged, a
            missing date column, a non-numeric cell (its column, line and value), or a value that is not finite
            (an empty cell or NaN, ``inf``, ``-inf``: :func:`zoo.data.finite.require_finite` names its column and
            data row).
    """
    import pandas as pd

    path = require_text_file(path, "CSV")
    try:
        frame = pd.read_csv(path)
    except UnicodeDecodeError:
        raise ConfigError(f"{path} is not a UTF-8 text CSV (is it a binary file?)") from None
    except pd.errors.EmptyDataError:
        raise ConfigError(
            f"{path} is empty: expected a header line '{date_column},<channel>,...' and data rows"
        ) from None
    except pd.errors.ParserError as exc:
        reason = str(exc).strip().splitlines()[0].removeprefix("Error tokenizing data. C error: ")
        raise ConfigError(f"{path} is not a well-formed CSV (every row needs the header's columns): {reason}") from None
    if date_column not in frame.columns:
        raise ConfigError(f"{path} has no date column {date_column!r}; columns are {list(frame.columns)}")
    if frame.empty:
        raise ConfigError(f"{path} has a header but no data rows")
    values = frame.drop(columns=[date_column])
    if columns is not None:
        values = values[read_header(path, date_column, columns)]
    if values.shape[1] == 0:
        raise ConfigError(f"{path} has no value columns besides {date_column!r}")
    for column in values.columns:
        if not pd.api.types.is_numeric_dtype(values[column]) or pd.api.types.is_bool_dtype(values[column]):
            row, value = _bad_cell(values, column)
            raise ConfigError(
                f"{path}: non-numeric value {value!r} in column {column!r}, data row {row}; "
                f"every column except {date_column!r} must be numeric"
            )
    names = [str(c) for c in values.columns]
    numbers = values.to_numpy(dtype=np.float64)
    require_finite(numbers, path, names, fix="fill missing cells and replace inf / -inf before forecasting")
    with np.errstate(over="ignore"):  # an overflow becomes inf, which the check below names
        numbers = numbers.astype(np.float32)
    require_finite(numbers, path, names, fix="values beyond +-3.4e38 do not fit float32: rescale that column")
    return numbers, names


def window_count(rows: int, seq_len: int, pred_len: int) -> int:
    """How many windows of ``seq_len + pred_len`` rows a segment of ``rows`` rows holds (stride 1)."""
    return max(0, rows - seq_len - pred_len + 1)


def require_eval_windows(path: Path, borders: dict[str, tuple[int, int]], seq_len: int, pred_len: int) -> None:
    """Refuse a split whose validation or test segment holds fewer than ``MIN_EVAL_WINDOWS`` windows.

    A score averaged over a handful of windows (a short weekly series with the default 96 / 96 leaves 2) picks
    the checkpoint and ranks models by noise, so the run stops before training instead.

    Raises:
        ConfigError: one line naming the file, both window counts, the minimum, ``seq_len`` / ``pred_len`` and
            the number of rows that would be enough with the ``ratio_7_1_2`` split.
    """
    counts = {name: window_count(end - max(start, 0), seq_len, pred_len) for name, (start, end) in borders.items()}
    if min(counts["val"], counts["test"]) >= MIN_EVAL_WINDOWS:
        return
    raise ConfigError(
        f"{path}: data.init_args.seq_len {seq_len} + pred_len {pred_len} leave {counts['val']} validation and "
        f"{counts['test']} test windows, fewer than the minimum of {MIN_EVAL_WINDOWS} each; use a shorter "
        f"seq_len / pred_len (set model.init_args.pred_len too) or a longer series (with the 70/10/20 split: "
        f"about {rows_for_eval_windows(seq_len, pred_len)} rows or more)"
    )


def rows_for_eval_windows(seq_len: int, pred_len: int) -> int:
    """The fewest rows whose ``ratio_7_1_2`` split gives ``MIN_EVAL_WINDOWS`` validation and test windows."""
    rows = 10 * (pred_len + MIN_EVAL_WINDOWS - 3)  # the 10 % validation segment binds; it holds <= 0.1 N + 2 rows
    while True:
        borders = split_borders(rows, seq_len, "ratio_7_1_2")
        counts = [window_count(borders[name][1] - borders[name][0], seq_len, pred_len) for name in ("val", "test")]
        if borders["val"][0] >= 0 and min(counts) >= MIN_EVAL_WINDOWS:
            return rows
        rows += 1


class WindowDataset(Dataset):
    """Sliding windows over a (rows, channels) array: item ``i`` is ``(x, y)`` with x ``(seq_len, C)`` the
    lookback starting at row ``i`` and y ``(pred_len, C)`` the rows that follow it."""

    def __init__(self, values: np.ndarray, seq_len: int, pred_len: int):
        if len(values) < seq_len + pred_len:
            raise ConfigError(
                f"a segment of {len(values)} rows is shorter than seq_len + pred_len = {seq_len + pred_len}: "
                "use a longer CSV or a shorter data.init_args.seq_len / pred_len"
            )
        self.values = torch.from_numpy(np.ascontiguousarray(values))
        self.seq_len, self.pred_len = seq_len, pred_len

    def __len__(self) -> int:
        return len(self.values) - self.seq_len - self.pred_len + 1

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        mid = i + self.seq_len
        return self.values[i:mid], self.values[mid : mid + self.pred_len]


class ForecastingDataModule(pl.LightningDataModule):
    """Windows of a multivariate CSV (all channels, ``features=M``), normalised with train statistics.

    Args:
        path: a user's own CSV (see the module docstring for the format). When given, ``dataset``,
            ``data_dir`` and ``file`` are not used: the file is read as is, with no catalog lookup and no
            checksum, and ``split="auto"`` means ``ratio_7_1_2``.
        file: CSV file name, e.g. ``"ETTh1.csv"``.
        dataset: name in the ``zoo.data`` catalog (``"ETT-small"``, ``"weather"``): the file is found and
            sha256-verified through :func:`zoo.data.resolve`. ``None`` reads ``data_dir/file`` as is (no
            checksum).
        data_dir: explicit folder holding ``file``.
        split: ``"auto"``, ``"ett_hour"``, ``"ett_minute"`` or ``"ratio_7_1_2"`` (see the module docstring).
        seq_len: lookback length L. pred_len: horizon H (the validation and test segments need 8 windows each).
        date_column: name of the timestamp column, dropped from the channels.
        columns: the channels to read, in this order (``None``: every column except ``date_column``).

    Batches are ``(x, y)`` with x ``(B, seq_len, C)`` and y ``(B, pred_len, C)``; ``model_shapes()`` gives
    ``{"num_channels": C}`` from the CSV's header line alone.
    """

    catalogue_fields = {"dataset": "stem", "file": "name"}  # with `path`: its name (zoo.cli.dataset_name)

    def __init__(
        self,
        file: str = "ETTh1.csv",
        dataset: str | None = "ETT-small",
        data_dir: str | None = None,
        split: str = AUTO,
        seq_len: int = 96,
        pred_len: int = 96,
        batch_size: int = 64,
        num_workers: int = 0,
        date_column: str = "date",
        path: str | None = None,
        columns: list[str] | None = None,
    ):
        super().__init__()
        if split not in (AUTO, *SPLITS):
            raise ConfigError(f"unknown split convention {split!r}; choose one of {', '.join((AUTO, *SPLITS))}")
        for key, value in (("seq_len", seq_len), ("pred_len", pred_len), ("batch_size", batch_size)):
            if value <= 0:
                raise ConfigError(f"data.init_args.{key} must be > 0, got {value}")
        if num_workers < 0:
            raise ConfigError(f"data.init_args.num_workers must be >= 0, got {num_workers}")
        self.save_hyperparameters()
        self.datasets: dict[str, WindowDataset] = {}
        self.channels: list[str] = []
        self.mean: np.ndarray | None = None
        self.std: np.ndarray | None = None
        self._csv: Path | None = None
        self._sha256: dict[str, str] = {}

    def csv_path(self) -> Path:
        """The CSV this module reads (found, and for a catalog dataset verified, once)."""
        if self._csv is None:
            self._csv = self._find_csv()
        return self._csv

    def _find_csv(self) -> Path:
        hp = self.hparams
        if hp.path is not None:
            path = Path(hp.path).expanduser()
            if not path.is_file():
                raise ConfigError(f"data.init_args.path: no CSV file at {path}")
            return path
        if hp.dataset is not None:
            return resolve(hp.dataset, path=hp.data_dir, files=[hp.file]) / hp.file
        if hp.data_dir is None:
            raise ConfigError("give data.init_args.path (a CSV), a catalog `dataset`, or a `data_dir` holding `file`")
        path = Path(hp.data_dir).expanduser() / hp.file
        if not path.is_file():
            raise ConfigError(f"no CSV at {path}")
        return path

    @property
    def split(self) -> str:
        """The split convention in use: ``split`` itself, or what ``"auto"`` stands for with this file."""
        hp = self.hparams
        if hp.split != AUTO:
            return hp.split
        if hp.path is None and hp.dataset == "ETT-small":
            return "ett_minute" if hp.file.startswith("ETTm") else "ett_hour"
        return "ratio_7_1_2"

    def model_shapes(self) -> dict[str, int]:
        """``{"num_channels": C}``: the channels this module reads, from the CSV's header line only."""
        hp = self.hparams
        return {"num_channels": len(read_header(self.csv_path(), hp.date_column, hp.columns))}

    def data_sha256(self) -> dict[str, str]:
        """{file name: sha256} of the CSV this module reads (recorded with the run)."""
        if not self._sha256:
            path = self.csv_path()
            digest = hashlib.sha256()
            with path.open("rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    digest.update(block)
            self._sha256 = {path.name: digest.hexdigest()}
        return dict(self._sha256)

    @property
    def num_channels(self) -> int:
        if not self.channels:
            self.setup()
        return len(self.channels)

    def setup(self, stage: str | None = None) -> None:
        if self.datasets:
            return
        hp = self.hparams
        values, self.channels = read_series(self.csv_path(), hp.date_column, hp.columns)
        borders = split_borders(len(values), hp.seq_len, self.split)
        require_eval_windows(self.csv_path(), borders, hp.seq_len, hp.pred_len)
        train = values[slice(*borders["train"])]
        self.mean = train.mean(axis=0)
        self.std = train.std(axis=0)
        self.std[self.std == 0] = 1.0  # a constant channel stays constant (0) instead of dividing by zero
        scaled = (values - self.mean) / self.std
        for name in _STAGES:
            self.datasets[name] = WindowDataset(scaled[slice(*borders[name])], hp.seq_len, hp.pred_len)

    def _loader(self, name: str, train: bool) -> DataLoader:
        self.setup()
        common = dict(
            batch_size=self.hparams.batch_size,
            num_workers=self.hparams.num_workers,
            persistent_workers=self.hparams.num_workers > 0,
        )
        if not train:
            return DataLoader(self.datasets[name], shuffle=False, drop_last=False, **common)
        # keeps its place in the epoch in checkpoints: a run killed mid-epoch resumes on the next batch
        return resumable_train_loader(self.datasets[name], **common)

    def train_dataloader(self) -> DataLoader:
        return self._loader("train", train=True)

    def val_dataloader(self) -> DataLoader:
        return self._loader("val", train=False)

    def test_dataloader(self) -> DataLoader:
        return self._loader("test", train=False)
