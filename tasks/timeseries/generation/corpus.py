"""Domains of the generation corpus: a generic "folder of CSVs -> one domain" reader and the built-in recipes.

A domain is a set of univariate series. Each CSV holds a header line and one row per time step; every value
column (``columns``, or every numeric column but the time column and ``drop_columns``) is one series, so a
folder of CSVs is one domain however many files and channels it has. Missing cells (empty, ``NA``) are gaps.
With ``time_column`` and ``freq`` the rows are reindexed to that regular grid, so absent rows (the gaps of
wind-turbine SCADA, solar sensors, NAB) become gaps too; windows that touch a gap are dropped later
(:mod:`zoo_tasks.timeseries.generation.windows`). ``inf`` / ``-inf`` cells are refused (one line naming the file,
column and row, :func:`zoo.data.finite.require_finite`): a gap is an empty cell, never an infinity.

A user's CSV may also be in **long format**, one row per timestamp and series (``Sensor,Date_Time,Count``): with
``id_column`` set to a column the file has, or with ``id_column="auto"`` (users' domains) when the time column
repeats a timestamp and exactly one other column holds text, the rows are grouped by that id column, each group
ordered by its parsed timestamps, and every value column of every id is one series (:func:`long_to_series`).
Repeated timestamps with no text column to tell the series apart are refused in one line saying how to reshape.

The recipes follow the mirror's ``ts-corpus/README.md`` and each folder's SOURCE.md (FRED-MD's second row is
transformation codes, not data; T1.csv's header is latin-1). Where a folder mixes quantities (air quality with
weather, electricity demand with temperature) the recipe keeps the domain's own quantity, because TimeDP
normalises each domain as one pooled distribution. The unseen domains (``stock``, ``web``) are never
pre-training domains.
"""

from __future__ import annotations

import glob
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from zoo.data.finite import require_finite
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
        id_column: the series-id column of a long-format file (one row per timestamp and series); ``"auto"``
            (:data:`AUTO_ID`): detect it (see the module docstring); None: every file is one column per series.
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
    id_column: str | None = None


AUTO_ID = "auto"
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
        raise ConfigError(
            f"unknown domain {name!r}; built-in domains: {', '.join(DOMAINS)} (your own: data.init_args."
            "user_domains '{name: folder or CSV}')"
        )
    return DOMAINS[name]


def folder_source(name: str, **options) -> DomainSource:
    """A user's domain: every ``*.csv`` of a folder given to :func:`read_domain`; ``options`` as DomainSource."""
    return DomainSource(name, ("*.csv",), dataset=None, **options)


def user_source(name: str, path: str | Path, **options) -> tuple[DomainSource, Path]:
    """A user's domain at ``path``, a folder of CSVs or one CSV file: (its DomainSource, the folder it reads).

    Raises:
        ConfigError: nothing at ``path``.
    """
    path = Path(path).expanduser()
    if path.is_dir():
        return folder_source(name, **options), path
    if path.is_file():
        return DomainSource(name, (glob.escape(path.name),), dataset=None, **options), path.parent
    raise ConfigError(f"domain {name!r}: no folder or CSV file at {path}")


def is_path(entry: str) -> bool:
    """Whether a domain list entry names a file or folder rather than a domain (a separator, ``.csv``, or it exists)."""
    return "/" in entry or "\\" in entry or entry.lower().endswith(".csv") or Path(entry).expanduser().exists()


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
    """The series of one CSV: one float64 array (rows,) per value column (per id and value column in long
    format), NaN at gaps.

    Raises:
        ConfigError: one line naming the file and what is wrong: missing, binary, not in ``source.encoding``,
            empty, no data rows, a missing column, a non-numeric value column (its first bad cell), an ``inf`` /
            ``-inf`` cell (its column and data row), unparsable or repeated timestamps, timestamps off the ``freq``
            grid, or a long-format file whose id column cannot be told.
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
    rows = len(frame)
    frame.index = range(rows)  # labels = data-row positions, kept through the drops below (for the messages)
    if source.skip_rows:
        frame = frame.drop(index=[r - 1 for r in source.skip_rows if r - 1 < len(frame)])
    frame = frame.dropna(how="all")  # trailing all-empty lines (FRED-MD)
    if frame.empty:
        raise ConfigError(f"{path} has a header but no data rows")
    _require_columns(path, frame, source)
    id_column = _id_column(path, frame, source)
    skip = {source.time_column, id_column, *source.drop_columns}
    columns = list(source.columns) or [c for c in frame.columns if c not in skip]
    if not columns:
        raise ConfigError(f"{path} has no value columns besides {sorted(c for c in skip if c)}")
    values = frame[columns].apply(_numeric_column, path=path, offset=len(source.skip_rows), source=source)
    _require_no_infinity(path, values, rows)
    if id_column is not None:
        return long_to_series(path, frame[source.time_column], frame[id_column], values, source)
    if source.freq:
        values = _reindex(path, frame[source.time_column], values, source)
    return [values[c].to_numpy(dtype=np.float64) for c in columns]


def _require_columns(path: Path, frame, source: DomainSource) -> None:
    """ConfigError naming the first column ``source`` reads that ``frame`` lacks."""
    wanted = [source.time_column] if source.time_column else []
    wanted += list(source.columns)
    if source.id_column not in (None, AUTO_ID):
        wanted.append(source.id_column)
    missing = [c for c in wanted if c not in frame.columns]
    if not missing:
        return
    hint = ""
    if source.dataset is None and missing[0] == source.time_column:
        hint = "; name the time column with data.init_args.date_column"
    elif source.dataset is None and missing[0] == source.id_column:
        hint = "; name the series-id column with data.init_args.id_column (null: one column per series)"
    raise ConfigError(f"{path} has no column {missing[0]!r}; columns are {list(frame.columns)}{hint}")


def _require_no_infinity(path: Path, values, rows: int) -> None:
    """Refuse ``inf`` / ``-inf`` cells (NaN cells are gaps), naming the file, column and data row."""
    on_file_rows = values.reindex(range(rows)).fillna(0.0)  # rows dropped above (skip_rows, blank) count as rows
    require_finite(
        on_file_rows.to_numpy(dtype=np.float64),
        path,
        [str(c) for c in values.columns],
        fix="replace or drop the infinite values (an empty cell is a gap)",
    )


def _text_columns(frame, names) -> list[str]:
    """The columns among ``names`` holding a cell that is not a number (empty cells do not count)."""
    import pandas as pd

    return [c for c in names if (pd.to_numeric(frame[c], errors="coerce").isna() & frame[c].notna()).any()]


def _id_column(path: Path, frame, source: DomainSource) -> str | None:
    """The series-id column when the file is long format (see the module docstring), else None.

    Raises:
        ConfigError: ``"auto"`` found a repeated timestamp but not exactly one text column to group by.
    """
    if source.id_column != AUTO_ID:
        return source.id_column
    if source.time_column is None:
        return None
    stamps = frame[source.time_column]
    repeated = stamps.duplicated()
    if not repeated.any():
        return None
    skip = {source.time_column, *source.drop_columns, *source.columns}
    text = _text_columns(frame, [c for c in frame.columns if c not in skip])
    if len(text) == 1:
        return text[0]
    first = stamps[repeated].iloc[0]
    found = f"text columns {text} could each be it" if text else "no text column tells the series apart"
    raise ConfigError(
        f"{path}: timestamp {str(first)!r} repeats in {source.time_column!r}, so the file looks like long format (one "
        f"row per timestamp and series), but {found}; name the id column with data.init_args.id_column, or reshape "
        f"the file to one column per series and one row per timestamp (pandas: df.pivot(index=time, columns=id, "
        "values=value))"
    )


def long_to_series(path: Path, stamps, ids, values, source: DomainSource) -> list[np.ndarray]:
    """The series of a long-format file: for each id (in order of first appearance), its rows ordered by their
    parsed timestamps (reindexed to ``source.freq`` when set), one float64 array per value column.

    Raises:
        ConfigError: an empty id, an unparsable timestamp, or a timestamp repeated within one id.
    """
    import pandas as pd

    if ids.isna().any():
        row = int(ids.index[ids.isna()][0]) + 1
        raise ConfigError(f"{path}: empty id in column {ids.name!r}, data row {row}; every row needs its series' id")
    twice = pd.concat([ids, stamps], axis=1).duplicated()
    if twice.any():
        row = twice.index[twice][0]
        raise ConfigError(
            f"{path}: id {str(ids[row])!r} has timestamp {str(stamps[row])!r} twice (data row {row + 1}); give each "
            "series one row per timestamp"
        )
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # "could not infer format": parsed one by one, still right
            index = pd.DatetimeIndex(pd.to_datetime(stamps, format=source.time_format))
    except (ValueError, TypeError) as exc:
        raise ConfigError(
            f"{path}: column {source.time_column!r} has an unparsable timestamp ({exc}); a long-format file's "
            "rows are ordered by their timestamps, so they must parse as dates or numbers"
        ) from None
    series = []
    for _, rows in values.set_axis(index).groupby(ids.to_numpy(), sort=False):
        rows = rows.sort_index()
        if source.freq:
            rows = _reindex(path, rows.index.to_series(), rows, source)
        series.extend(rows[c].to_numpy(dtype=np.float64) for c in values.columns)
    return series


def _numeric_column(column, path: Path, offset: int, source: DomainSource):
    """``column`` as float64; ConfigError naming its first non-numeric cell (empty cells and ``NA`` are gaps)."""
    import pandas as pd

    if pd.api.types.is_bool_dtype(column):
        raise ConfigError(f"{path}: column {column.name!r} is true/false, not numeric; list it in `drop_columns`")
    parsed = pd.to_numeric(column, errors="coerce")
    bad = (parsed.isna() & column.notna()).to_numpy()
    if bad.any():
        position = int(bad.argmax())
        fix = "name the domain's value columns in `columns` (or its ids in `drop_columns`)"
        if source.dataset is None:
            fix = "every column but the time column must be numeric (a series-id column: data.init_args.id_column)"
        raise ConfigError(
            f"{path}: non-numeric value {column.iloc[position]!r} in column {column.name!r}, data row "
            f"{position + 1 + offset}; {fix}"
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
