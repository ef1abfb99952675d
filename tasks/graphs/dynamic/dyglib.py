"""DyGLib's own dataset files, read as they are distributed: ``ml_<name>.csv`` with ``ml_<name>.npy`` (edge
features) and ``ml_<name>_node.npy`` (node features) beside it.

DyGLib (Yu et al., NeurIPS 2023; ``preprocess_data/preprocess_data.py`` writes them with pandas, ``utils/
DataLoader.py`` reads them) stores one interaction per row: a saved pandas index (an unnamed first column), then
``u`` (source), ``i`` (destination), ``ts`` (time), ``label`` (a state label, unused in link prediction) and
``idx`` (the edge id, 1..N: the row of the edge-feature array). Node ids are 1-based (0 is padding); row 0 of both
``.npy`` arrays is padding. The CSV is recognised by its header: ``,u,i,ts,label,idx`` (or ``u,i,ts,label,idx``
when saved without the index), so the saved index is never taken for the source.

Ids are renumbered as :func:`~zoo_tasks.graphs.dynamic.events.parse_edges` renumbers them (1..n in sorted order):
for DyGLib's contiguous ids 1..n that is the identity, so ``ml_uci.csv`` keeps its ids, as CollegeMsg does.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from zoo.data.finite import require_finite
from zoo.errors import ConfigError, DatasetNotFoundError
from zoo_tasks.graphs.dynamic.events import (
    DYGLIB_FEATURE_WIDTH,
    TemporalGraph,
    as_float32,
    build_graph,
    by_line,
    parse_edges,
    require_chronological,
)

COLUMNS = ("u", "i", "ts", "label", "idx")
INDEX_NAMES = ("", "Unnamed: 0")


def read_user_edges(path: str | Path, feature_width: int = DYGLIB_FEATURE_WIDTH) -> TemporalGraph:
    """A user's temporal edge file: DyGLib's ``ml_<name>.csv`` (:func:`read_dyglib`) when its header says so,
    else a ``src,dst,timestamp[,features...]`` CSV (:func:`~zoo_tasks.graphs.dynamic.events.parse_edges`)."""
    path = Path(path).expanduser()
    if dyglib_index_column(path) is not None:
        return read_dyglib(path, feature_width)
    return parse_edges(path, feature_width=feature_width)


def dyglib_index_column(path: Path) -> bool | None:
    """Whether DyGLib's CSV ``path`` has the saved index column (True / False), or None when the file's first
    line is not DyGLib's header (or the file does not exist)."""
    if not path.is_file():
        return None
    with open(path, encoding="utf-8") as fh:
        names = [name.strip() for name in fh.readline().split(",")]
    if tuple(names) == COLUMNS:
        return False
    if len(names) == len(COLUMNS) + 1 and names[0] in INDEX_NAMES and tuple(names[1:]) == COLUMNS:
        return True
    return None


def feature_files(path: Path) -> dict[str, Path]:
    """``{"edge": ml_<name>.npy, "node": ml_<name>_node.npy}``, those present beside DyGLib's CSV ``path``."""
    candidates = {"edge": path.with_suffix(".npy"), "node": path.with_name(f"{path.stem}_node.npy")}
    return {kind: f for kind, f in candidates.items() if f.is_file()}


def read_dyglib(path: str | Path, feature_width: int = DYGLIB_FEATURE_WIDTH) -> TemporalGraph:
    """DyGLib's ``ml_<name>.csv`` (+ its ``.npy`` features when present) as a :class:`TemporalGraph`: sources
    ``u``, destinations ``i``, times ``ts``; edge k's features are row ``idx`` of ``ml_<name>.npy``, node features
    row ``id`` of ``ml_<name>_node.npy``, zero-padded to ``feature_width`` (zeros where a file is absent).

    Raises ``ConfigError`` naming the file (and line / row) for a malformed row, a non-integer id, a NaN / inf,
    timestamps out of order, an ``idx`` or node id beyond its feature array, or features wider than
    ``feature_width``."""
    path = Path(path).expanduser()
    has_index = dyglib_index_column(path)
    if has_index is None:
        raise DatasetNotFoundError(f"{path}: not a DyGLib ml_<name>.csv (its header must be ',u,i,ts,label,idx')")
    rows, lines, blank = _rows(path, has_index)
    src, dst, idx = (rows[:, COLUMNS.index(c)].astype(np.int64) for c in ("u", "i", "idx"))
    ts = rows[:, COLUMNS.index("ts")]
    require_finite(by_line(ts[:, None], lines), path, ["ts"], rows="line")
    require_chronological(ts, lines, path)
    features = feature_files(path)
    edge_feats = _edge_features(features.get("edge"), idx, lines, path, feature_width)
    name = path.stem[3:] if path.stem.startswith("ml_") else path.stem
    graph = build_graph(name, src, dst, ts, edge_feats, feature_width, {"format": "dyglib", "blank_lines": blank,
                        "header_lines": 1})  # fmt: skip
    graph.cleaning["node_feature_columns"] = 0
    if "node" in features:
        graph.node_features, graph.cleaning["node_feature_columns"] = _node_features(
            features["node"], graph.raw_ids, feature_width
        )
    return graph


def _rows(path: Path, has_index: bool) -> tuple[np.ndarray, np.ndarray, int]:
    """(rows (N, 5) float64 of u, i, ts, label, idx; their 1-based line numbers; blank lines skipped)."""
    skip = 1 if has_index else 0
    rows, lines, blank = [], [], 0
    with open(path, encoding="utf-8") as fh:
        next(fh)
        for number, line in enumerate(fh, start=2):
            if not line.strip():
                blank += 1
                continue
            parts = line.split(",")
            if len(parts) != len(COLUMNS) + skip:
                raise ConfigError(
                    f"{path}:{number}: {len(parts)} field(s), DyGLib's header has {len(COLUMNS) + skip} "
                    f"({'index,' if has_index else ''}{','.join(COLUMNS)})"
                )
            rows.append(_row(parts[skip:], f"{path}:{number}"))
            lines.append(number)
    if not rows:
        raise ConfigError(f"{path}: no interactions (the file holds only DyGLib's header)")
    return np.array(rows, dtype=np.float64), np.array(lines), blank


def _row(fields: list[str], where: str) -> list[float]:
    """One row's numbers; ``u``, ``i`` and ``idx`` must be integers (``3`` or ``3.0``, as pandas may write them)."""
    try:
        values = [float(f) for f in fields]
    except ValueError:
        raise ConfigError(f"{where}: u,i,ts,label,idx must be numbers, got {[f.strip() for f in fields]!r}") from None
    for column in ("u", "i", "idx"):
        at = COLUMNS.index(column)
        if not values[at].is_integer() or values[at] < 0:
            raise ConfigError(f"{where}: {column} must be a non-negative integer id, got {fields[at].strip()!r}")
    return values


def _load(path: Path) -> np.ndarray:
    """A 2-D numeric feature array from ``path`` as float32 (finite, row 0 = padding), or ``ConfigError`` naming
    it."""
    try:
        array = np.load(path, allow_pickle=False)
    except (ValueError, OSError) as err:
        raise ConfigError(f"{path}: not a readable numpy array ({str(err).splitlines()[0]})") from None
    if array.ndim != 2 or array.dtype.kind not in "biuf":
        raise ConfigError(f"{path}: expected a 2-D numeric array (rows, features), got {array.dtype} {array.shape}")
    array = as_float32(array)
    fix = "clean the array (rows count from 0, row 0 is padding; columns from 1; float32: beyond ±3.4e38 is inf)"
    require_finite(array, path, rows="row", first_row=0, fix=fix)
    return array


def _check_width(array: np.ndarray, path: Path, feature_width: int) -> None:
    if array.shape[1] > feature_width:
        raise ConfigError(f"{path}: {array.shape[1]} feature columns, more than feature_width={feature_width}")


def _edge_features(path: Path | None, idx: np.ndarray, lines: np.ndarray, csv: Path, feature_width: int) -> np.ndarray:
    """(N, F) edge features in row order: row ``idx`` of ``ml_<name>.npy``; (N, 0) without the file."""
    if path is None:
        return np.zeros((len(idx), 0), dtype=np.float32)
    array = _load(path)
    _check_width(array, path, feature_width)
    bad = np.flatnonzero((idx < 1) | (idx >= len(array)))
    if len(bad):
        i = int(bad[0])
        raise ConfigError(
            f"{csv}:{lines[i]}: idx {idx[i]} has no row in {path.name} ({len(array)} rows, row 0 padding: idx must "
            f"be 1..{len(array) - 1})"
        )
    return array[idx].astype(np.float32)


def _node_features(path: Path, raw_ids: np.ndarray, feature_width: int) -> tuple[np.ndarray, int]:
    """(n + 1, feature_width) node features, row k the row ``raw_ids[k]`` of ``ml_<name>_node.npy`` (row 0: its
    padding row), zero-padded; and the file's feature width."""
    array = _load(path)
    _check_width(array, path, feature_width)
    if raw_ids.max() >= len(array):
        raise ConfigError(
            f"{path}: {len(array)} rows, but the CSV has node id {raw_ids.max()} (row 0 padding: it needs "
            f"{raw_ids.max() + 1} rows)"
        )
    out = np.zeros((len(raw_ids), feature_width), dtype=np.float32)
    out[:, : array.shape[1]] = array[raw_ids]
    return out, int(array.shape[1])
