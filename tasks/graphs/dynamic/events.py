"""Temporal edge lists in DyGLib's processed form (``ml_<name>.csv`` + zero-padded feature arrays), read from
SNAP's space-separated ``SRC DST UNIXTS`` files (CollegeMsg) or a user's CSV ``src,dst,timestamp[,features...]``
(DyGLib's own ``ml_<name>.csv`` files themselves are read by ``dyglib.py``).

DyGLib (Yu et al., NeurIPS 2023, ``preprocess_data/preprocess_data.py``) keeps interactions in file order
(timestamps must be non-decreasing: its ``assert ts >= previous_time``), numbers edges 1..N (edge id 0 is
padding), numbers nodes from 1 (node id 0 is padding) and pads node and edge features with zeros to width 172
(``utils/DataLoader.py``: ``NODE_FEAT_DIM = EDGE_FEAT_DIM = 172``). Node ids here are re-indexed to 1..n in
sorted order of the raw ids: for a 0-based contiguous file that is DyGLib's ``+1`` (``reindex``, non-bipartite),
for SNAP's 1-based CollegeMsg ids (1..1899) it is the identity, which is the ``ml_uci.csv`` numbering.

Every malformed input raises one clear error naming the file and line; nothing is dropped silently: the
lines that were skipped (blank lines, a header) and whether ids were renumbered are counted in ``cleaning``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from zoo.data.finite import require_finite
from zoo.errors import ConfigError, DatasetNotFoundError

DYGLIB_FEATURE_WIDTH = 172


@dataclass
class TemporalGraph:
    """A chronological interaction list, DyGLib's ``Data`` plus its raw features.

    Shapes (N interactions, n nodes, F feature width):
        src, dst: (N,) int64 node ids in 1..n; ts: (N,) float64, non-decreasing; edge_ids: (N,) int64 = 1..N.
        node_features: (n + 1, F) float32 (row 0 is padding); edge_features: (N + 1, F) float32 (row 0 padding).
        raw_ids: (n + 1,) the file's id of each node (raw_ids[0] is unused).
        cleaning: what was skipped or changed while reading (counts), for the run record.
    """

    src: np.ndarray
    dst: np.ndarray
    ts: np.ndarray
    edge_ids: np.ndarray
    node_features: np.ndarray
    edge_features: np.ndarray
    raw_ids: np.ndarray
    name: str = ""
    cleaning: dict = field(default_factory=dict)

    @property
    def num_interactions(self) -> int:
        return len(self.src)

    @property
    def num_nodes(self) -> int:
        return len(np.union1d(self.src, self.dst))


def _is_int(text: str) -> bool:
    text = text.strip()
    return text.lstrip("+-").isdigit()


def _fields(line: str, sep: str | None) -> list[str]:
    return [f.strip() for f in (line.split(sep) if sep else line.split())]


def parse_edges(path: str | Path, sep: str | None = ",", feature_width: int = DYGLIB_FEATURE_WIDTH) -> TemporalGraph:
    """Read ``src<sep>dst<sep>timestamp[<sep>feature ...]`` lines (``sep=None``: any whitespace) into a
    :class:`TemporalGraph`.

    A first line whose id fields are not integers is a header (skipped, counted); blank lines are skipped and
    counted. Raises ``DatasetNotFoundError`` for a missing file and ``ConfigError`` (``file:line: why``) for a
    row with fewer than 3 fields or a different number of feature columns than the first row, a non-integer
    node id, a timestamp or feature that is not a number, a NaN / inf (:func:`zoo.data.finite.require_finite`:
    file, column, line), a timestamp earlier than the previous row's, an empty file, more feature columns than
    ``feature_width``, or a header whose first column has no name (a saved index, as in DyGLib's ``ml_<name>.csv``,
    which :func:`zoo_tasks.graphs.dynamic.dyglib.read_user_edges` reads).
    """
    path = Path(path).expanduser()
    if not path.is_file():
        raise DatasetNotFoundError(f"temporal edge file {str(path)!r} does not exist (expected src,dst,timestamp rows)")
    src, dst, ts, feats, lines = [], [], [], [], []
    blank = header = 0
    names: list[str] | None = None
    width = None
    with open(path, encoding="utf-8") as fh:
        for number, line in enumerate(fh, start=1):
            if not line.strip():
                blank += 1
                continue
            parts = _fields(line, sep)
            where = f"{path}:{number}"
            if len(parts) < 3:
                raise ConfigError(f"{where}: expected src,dst,timestamp[,features...], got {len(parts)} field(s)")
            if not (_is_int(parts[0]) and _is_int(parts[1])):
                if not src and header == 0 and not _looks_numeric(parts[0]):
                    _refuse_unnamed_first_column(where, parts)
                    header += 1
                    names = parts
                    continue
                raise ConfigError(f"{where}: node ids must be integers, got src={parts[0]!r} dst={parts[1]!r}")
            if width is None:
                width = len(parts) - 3
            elif len(parts) - 3 != width:
                raise ConfigError(f"{where}: {len(parts) - 3} feature column(s), the first row has {width}")
            try:
                t = float(parts[2])
                row = [float(x) for x in parts[3:]]
            except ValueError:
                raise ConfigError(f"{where}: timestamp and features must be numbers, got {parts[2:]!r}") from None
            src.append(int(parts[0]))
            dst.append(int(parts[1]))
            ts.append(t)
            feats.append(row)
            lines.append(number)
    if not src:
        raise ConfigError(f"{path}: no interactions (the file is empty or holds only a header)")
    if width > feature_width:
        raise ConfigError(f"{path}: {width} edge feature columns, more than feature_width={feature_width}")
    ts, feats, lines = np.array(ts), as_float32(np.array(feats).reshape(len(ts), width)), np.array(lines)
    columns = ["timestamp", *(f"feature {j + 1}" for j in range(width))]
    if names and len(names) == width + 3:
        columns = names[2:]
    fix = "clean the file (features are float32: beyond ±3.4e38 is inf) and run again"
    require_finite(by_line(np.column_stack([ts, feats]), lines), path, columns, rows="line", fix=fix)
    require_chronological(ts, lines, path)
    return build_graph(path.stem, np.array(src), np.array(dst), ts, feats, feature_width,
                       {"blank_lines": blank, "header_lines": header})  # fmt: skip


def as_float32(array: np.ndarray) -> np.ndarray:
    """``array`` as float32 (the model's features): values beyond float32's range become inf, refused as such."""
    with np.errstate(over="ignore"):
        return np.asarray(array, dtype=np.float64).astype(np.float32)


def _refuse_unnamed_first_column(where: str, header: list[str]) -> None:
    """A header starting with an empty name is a saved row index (pandas ``to_csv``), which would be read as the
    source ids: refused, naming the fix."""
    if header[0].strip() not in ("", "Unnamed: 0"):
        return
    raise ConfigError(
        f"{where}: the first column has no name (a saved row index, e.g. pandas to_csv without index=False) and "
        f"would be read as the source ids; header {','.join(header)!r}: drop that column (columns must be "
        "src,dst,timestamp[,features...]) or give DyGLib's own ml_<name>.csv (header ',u,i,ts,label,idx')"
    )


def by_line(values: np.ndarray, lines: np.ndarray) -> np.ndarray:
    """``values`` (rows, C) placed at their 1-based file line numbers in a zero-filled (last line, C) array, so
    :func:`~zoo.data.finite.require_finite` (``first_row=1``) names file lines although blank lines and a header
    were skipped."""
    placed = np.zeros((int(lines.max()), values.shape[1]), dtype=values.dtype)
    placed[lines - 1] = values
    return placed


def require_chronological(ts: np.ndarray, lines: np.ndarray, path: Path) -> None:
    """``ConfigError`` at the first timestamp earlier than the one before it (DyGLib keeps file order)."""
    earlier = np.flatnonzero(np.diff(ts) < 0)
    if len(earlier):
        i = int(earlier[0]) + 1
        raise ConfigError(
            f"{path}:{lines[i]}: timestamp {_number(ts[i])} is earlier than the previous row's ({_number(ts[i - 1])}); "
            "rows must be sorted by time (DyGLib keeps file order)"
        )


def _number(value: float) -> str:
    return np.format_float_positional(value, trim="-")


def _looks_numeric(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def build_graph(
    name: str, src: np.ndarray, dst: np.ndarray, ts: np.ndarray, feats: np.ndarray, feature_width: int, cleaning: dict
) -> TemporalGraph:
    """A :class:`TemporalGraph` of raw ids ``src`` / ``dst`` renumbered 1..n in sorted order, edges 1..N in row
    order, ``feats`` (N, F <= feature_width) zero-padded below a zero row; zero node features."""
    raw_ids = np.union1d(src, dst)
    new_src = np.searchsorted(raw_ids, src) + 1
    new_dst = np.searchsorted(raw_ids, dst) + 1
    n, count = len(raw_ids), len(src)
    edge_features = np.zeros((count + 1, feature_width), dtype=np.float32)
    if feats.size:
        edge_features[1:, : feats.shape[1]] = feats
    cleaning = {
        **cleaning,
        "rows": count,
        "self_loops_kept": int((src == dst).sum()),
        "ids_renumbered": bool(not np.array_equal(raw_ids, np.arange(1, n + 1))),
        "edge_feature_columns": int(feats.shape[1]) if feats.ndim == 2 else 0,
    }
    return TemporalGraph(
        src=new_src.astype(np.int64),
        dst=new_dst.astype(np.int64),
        ts=ts.astype(np.float64),
        edge_ids=np.arange(1, count + 1, dtype=np.int64),
        node_features=np.zeros((n + 1, feature_width), dtype=np.float32),
        edge_features=edge_features,
        raw_ids=np.concatenate([[0], raw_ids]).astype(np.int64),
        name=name,
        cleaning=cleaning,
    )


def read_collegemsg(path: str | Path) -> TemporalGraph:
    """SNAP's CollegeMsg.txt (``SRC DST UNIXTS``, space-separated) = DyGLib's UCI; checks its published size."""
    graph = parse_edges(path, sep=None)
    graph.name = "uci"
    if graph.num_nodes != 1899 or graph.num_interactions != 59835:
        raise ConfigError(
            f"{path}: {graph.num_nodes} nodes / {graph.num_interactions} edges; CollegeMsg (DyGLib's UCI) has "
            "1,899 / 59,835"
        )
    return graph
