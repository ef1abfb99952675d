"""Temporal edge lists in DyGLib's processed form (``ml_<name>.csv`` + zero-padded feature arrays), read from
SNAP's space-separated ``SRC DST UNIXTS`` files (CollegeMsg) or a user's CSV ``src,dst,timestamp[,features...]``.

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

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

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
    node id, a timestamp or feature that is not a finite number, a timestamp earlier than the previous row's,
    an empty file, or more feature columns than ``feature_width``.
    """
    path = Path(path).expanduser()
    if not path.is_file():
        raise DatasetNotFoundError(f"temporal edge file {str(path)!r} does not exist (expected src,dst,timestamp rows)")
    src, dst, ts, feats = [], [], [], []
    blank = header = 0
    width = None
    previous = -math.inf
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
                    header += 1
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
            if not math.isfinite(t) or not all(math.isfinite(x) for x in row):
                raise ConfigError(f"{where}: timestamp and features must be finite, got {parts[2:]!r}")
            if t < previous:
                raise ConfigError(
                    f"{where}: timestamp {parts[2]} is earlier than the previous row's ({previous:g}); "
                    "rows must be sorted by time (DyGLib keeps file order)"
                )
            previous = t
            src.append(int(parts[0]))
            dst.append(int(parts[1]))
            ts.append(t)
            feats.append(row)
    if not src:
        raise ConfigError(f"{path}: no interactions (the file is empty or holds only a header)")
    if width > feature_width:
        raise ConfigError(f"{path}: {width} edge feature columns, more than feature_width={feature_width}")
    return _build(path.stem, np.array(src), np.array(dst), np.array(ts), np.array(feats, dtype=np.float32),
                  feature_width, {"blank_lines": blank, "header_lines": header})  # fmt: skip


def _looks_numeric(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _build(
    name: str, src: np.ndarray, dst: np.ndarray, ts: np.ndarray, feats: np.ndarray, feature_width: int, cleaning: dict
) -> TemporalGraph:
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
