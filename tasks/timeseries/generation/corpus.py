"""Domains of the generation corpus: a generic "folder of CSVs -> one domain" reader and the built-in recipes.

A domain is a set of univariate series. Each CSV holds a header line and one row per time step; every value
column (``columns``, or every numeric column but the time column and ``drop_columns``) is one series, so a
folder of CSVs is one domain however many files and channels it has. Missing cells (empty, ``NA``) are gaps.
With ``time_column`` and ``freq`` the rows are reindexed to that regular grid, so absent rows (the gaps of
wind-turbine SCADA, solar sensors, NAB) become gaps too; windows that touch a gap are dropped later
(:mod:`zoo_tasks.timeseries.generation.windows`).

The recipes follow the mirror's ``ts-corpus/README.md`` and each folder's SOURCE.md (FRED-MD's second row is
transformation codes, not data; T1.csv's header is latin-1). Where a folder mixes quantities (air quality with
weather, electricity demand with temperature) the recipe keeps the domain's own quantity, because TimeDP
normalises each domain as one pooled distribution. The unseen domains (``stock``, ``web``) are never
pre-training domains.
"""

from __future__ import annotations

import glob
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from zoo.errors import ConfigError
from zoo.utils.text_file import require_text_file


@dataclass(frozen=True)
class DomainSource:
    """Where one domain's series come from.

    Attributes:
        name: the domain's name (a row of the tables).
        files: CSV paths relative to the dataset folder; glob patterns (``data/realTweets/*.csv``) allowed.
        dataset: ``zoo.data`` catalog name of the folder (verified by sha256), or None for a user's folder.
        columns: the value columns to read (each one series); empty = every numeric column except
            ``time_column`` and ``drop_columns``.
        time_column: timestamp column (dropped from the values; needed for ``freq``).
        time_format: ``strptime`` format of the timestamps (None: pandas infers it).
        freq: pandas frequency (``"10min"``, ``"h"``); rows are reindexed to this grid and absent rows become gaps.
        skip_rows: 1-based data rows that are not data (FRED-MD's ``Transform:`` row is data row 1).
        drop_columns: non-value columns to ignore (ids, categorical codes).
        encoding: text encoding of the files.
    """

    name: str
    files: tuple[str, ...]
    dataset: str | None = "ts-corpus"
    columns: tuple[str, ...] = ()
    time_column: str | None = None
    time_format: str | None = None
    freq: str | None = None
    skip_rows: tuple[int, ...] = ()
    drop_columns: tuple[str, ...] = ()
    encoding: str = "utf-8"


_NAB = "nab-real/data"
_PLANT_2 = "Plant_2_Weather_Sensor_Data.csv"
PRETRAIN_DOMAINS: dict[str, DomainSource] = {
    s.name: s
    for s in (
        DomainSource("fred_md", ("fred-md/current.csv",), time_column="sasdate", skip_rows=(1,)),
        DomainSource("nn5", ("nn5/nn5.csv",)),
        DomainSource("taxi", (f"{_NAB}/realKnownCause/nyc_taxi.csv",), time_column="timestamp", freq="30min"),
        DomainSource("tweets", (f"{_NAB}/realTweets/*.csv",), time_column="timestamp"),
        DomainSource("cloud", (f"{_NAB}/realAWSCloudwatch/*.csv",), time_column="timestamp"),
        DomainSource(
            "traffic",
            ("metro-traffic/traffic_hourly.csv",),
            columns=("traffic_volume",),
            time_column="datetime",
            freq="h",
        ),
        DomainSource("electricity", ("vic-elec/vic_elec.csv",), columns=("Demand",), time_column="Time", freq="30min"),
        DomainSource(
            "solar",
            tuple(f"solar-plant-weather/{p}" for p in ("Plant_1_Weather_Sensor_Data.clean.csv", _PLANT_2)),
            columns=("IRRADIATION",),
            time_column="DATE_TIME",
            freq="15min",
        ),
        DomainSource(
            "wind",
            ("wind-turbine-scada/T1.csv",),
            columns=("ActivePower",),
            time_column="Date/Time",
            time_format="%d %m %Y %H:%M",
            freq="10min",
            encoding="latin-1",
        ),
        DomainSource("air_quality", ("beijing-pm25/pollution.csv",), columns=("pm2.5",)),
        DomainSource("sunspots", ("sunspots-monthly/monthly-sunspots.csv",), time_column="Month"),
        DomainSource("ett", ("ETTh1.csv", "ETTh2.csv"), dataset="ETT-small", time_column="date", freq="h"),
        DomainSource(
            "weather",
            ("weather.csv",),
            dataset="weather",
            columns=("T (degC)", "Tdew (degC)", "Tlog (degC)"),
            time_column="date",
            encoding="latin-1",
        ),
    )
}
# TimeDP's unseen domains: TimeGAN's stock file (its Open column, see fewshot.py) and web page views.
UNSEEN_DOMAINS: dict[str, DomainSource] = {
    "stock": DomainSource("stock", ("timegan-stock/stock_data.csv",), columns=("Open",)),
    # 20 articles; wiki_all (every project's total, ~1,000x an article) is an aggregate, not a page
    "web": DomainSource(
        "web", ("wiki-pageviews/wiki_pageviews_daily.csv",), time_column="datetime", drop_columns=("wiki_all",)
    ),
}
DOMAINS = {**PRETRAIN_DOMAINS, **UNSEEN_DOMAINS}


def domain_source(name: str) -> DomainSource:
    """The built-in recipe ``name``; raises ConfigError listing the domains."""
    if name not in DOMAINS:
        raise ConfigError(f"unknown domain {name!r}; built-in domains: {', '.join(DOMAINS)} (or give a folder path)")
    return DOMAINS[name]


def folder_source(name: str, **options) -> DomainSource:
    """A user's domain: every ``*.csv`` of a folder given to :func:`read_domain`; ``options`` as DomainSource."""
    return DomainSource(name, ("*.csv",), dataset=None, **options)


def source_root(source: DomainSource, folder: str | Path | None = None) -> Path:
    """The folder ``source.files`` are relative to: ``folder`` for a user's domain, else the verified catalog
    folder (``zoo.data.resolve``, which checks the sha256 of every file it reads)."""
    if source.dataset is None:
        if folder is None:
            raise ConfigError(f"domain {source.name!r} has no catalog dataset: give its folder")
        root = Path(folder).expanduser()
        if not root.is_dir():
            raise ConfigError(f"domain {source.name!r}: no folder at {root}")
        return root
    from zoo.data import resolve

    files = [f for f in source.files if not glob.has_magic(f)]
    root = resolve(source.dataset, path=folder, files=files or None)
    return root


def source_files(source: DomainSource, root: Path) -> list[Path]:
    """The CSV files of ``source`` under ``root`` (globs expanded, sorted); ConfigError when one is missing."""
    found: list[Path] = []
    for pattern in source.files:
        if glob.has_magic(pattern):
            matches = sorted(Path(p) for p in glob.glob(str(root / pattern)))
            if not matches:
                raise ConfigError(f"domain {source.name!r}: no file matches {pattern!r} in {root}")
            found.extend(matches)
        else:
            path = root / pattern
            if not path.is_file():
                raise ConfigError(f"domain {source.name!r}: missing file {path}")
            found.append(path)
    return found


def read_csv_series(path: Path, source: DomainSource) -> list[np.ndarray]:
    """The series of one CSV: one float64 array (rows,) per value column, NaN at gaps.

    Raises:
        ConfigError: one line naming the file and what is wrong: missing, binary, not in ``source.encoding``,
            empty, no data rows, a missing column, a non-numeric value column (its first bad cell), unparsable or
            repeated timestamps, or timestamps off the ``freq`` grid.
    """
    import pandas as pd

    path = require_text_file(path, "CSV")
    try:
        frame = pd.read_csv(path, encoding=source.encoding, skipinitialspace=True)
    except UnicodeDecodeError:
        raise ConfigError(f"{path} is not a {source.encoding} text CSV (set the domain's encoding)") from None
    except pd.errors.EmptyDataError:
        raise ConfigError(f"{path} is empty: expected a header line and data rows") from None
    except pd.errors.ParserError as exc:
        reason = str(exc).strip().splitlines()[0].removeprefix("Error tokenizing data. C error: ")
        raise ConfigError(f"{path} is not a well-formed CSV (every row needs the header's columns): {reason}") from None
    if source.skip_rows:
        frame = frame.drop(index=[r - 1 for r in source.skip_rows if r - 1 < len(frame)])
    frame = frame.dropna(how="all")  # trailing all-empty lines (FRED-MD)
    if frame.empty:
        raise ConfigError(f"{path} has a header but no data rows")
    wanted = [source.time_column] if source.time_column else []
    wanted += list(source.columns)
    missing = [c for c in wanted if c not in frame.columns]
    if missing:
        raise ConfigError(f"{path} has no column {missing[0]!r}; columns are {list(frame.columns)}")
    if source.columns:
        columns = list(source.columns)
    else:
        skip = {source.time_column, *source.drop_columns}
        columns = [c for c in frame.columns if c not in skip]
        if not columns:
            raise ConfigError(f"{path} has no value columns besides {sorted(c for c in skip if c)}")
    values = frame[columns].apply(_numeric_column, path=path, offset=len(source.skip_rows))
    if source.freq:
        values = _reindex(path, frame[source.time_column], values, source)
    return [values[c].to_numpy(dtype=np.float64) for c in columns]


def _numeric_column(column, path: Path, offset: int):
    """``column`` as float64; ConfigError naming its first non-numeric cell (empty cells and ``NA`` are gaps)."""
    import pandas as pd

    if pd.api.types.is_bool_dtype(column):
        raise ConfigError(f"{path}: column {column.name!r} is true/false, not numeric; list it in `drop_columns`")
    parsed = pd.to_numeric(column, errors="coerce")
    bad = (parsed.isna() & column.notna()).to_numpy()
    if bad.any():
        position = int(bad.argmax())
        raise ConfigError(
            f"{path}: non-numeric value {column.iloc[position]!r} in column {column.name!r}, data row "
            f"{position + 1 + offset}; name the domain's value columns in `columns` (or its ids in `drop_columns`)"
        )
    return parsed.astype(np.float64)


def _reindex(path: Path, stamps, values, source: DomainSource):
    """``values`` on the regular ``source.freq`` grid from the first to the last timestamp (absent rows -> NaN)."""
    import pandas as pd

    try:
        index = pd.to_datetime(stamps, format=source.time_format)
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"{path}: column {source.time_column!r} has an unparsable timestamp ({exc})") from None
    index = pd.DatetimeIndex(index)
    if index.duplicated().any():
        raise ConfigError(f"{path}: repeated timestamp {index[index.duplicated()][0]} in {source.time_column!r}")
    try:
        grid = pd.date_range(index.min(), index.max(), freq=source.freq)
    except ValueError as exc:
        raise ConfigError(f"{path}: bad freq {source.freq!r} ({exc})") from None
    off = ~index.isin(grid)
    if off.any():
        raise ConfigError(
            f"{path}: timestamp {index[off][0]} is not on the {source.freq!r} grid starting {index.min()}; "
            "resample the file or drop `freq`"
        )
    return values.set_axis(index).sort_index().reindex(grid)


def read_domain(source: DomainSource, folder: str | Path | None = None) -> list[np.ndarray]:
    """Every series of a domain (float64 arrays, NaN at gaps), file by file, column by column."""
    root = source_root(source, folder)
    series = [s for path in source_files(source, root) for s in read_csv_series(path, source)]
    if not any(np.isfinite(s).any() for s in series):
        raise ConfigError(f"domain {source.name!r}: every value is missing")
    return series
