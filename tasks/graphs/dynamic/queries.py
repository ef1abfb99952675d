"""Link queries for ``zoo predict`` on dynamic graphs (:mod:`zoo_tasks.graphs.dynamic.predict`): (source,
destination, time) triples to score, either the evaluation protocol's own (a split's positive events and the
negatives its sampler draws for them) or read from a user's CSV ``source,destination,time[,label]``.

Queries are scored in *streams*: consecutive batches of ``data.eval_batch_size`` rows, as the protocol's loaders
batch them. This matters because DyGFormer pads each batch to its longest neighbour sequence and its attention does
not mask the padding, so a query's score depends (slightly) on the other queries of its batch: the protocol's
queries are scored in exactly the protocol's batches (positives in one stream, their negatives in another).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from zoo.errors import ConfigError
from zoo_tasks.graphs.dynamic.negatives import STRATEGIES, eval_sampler, evaluation_negatives
from zoo_tasks.graphs.dynamic.split import Interactions

PARTS = ("test", "new_node_test", "val", "new_node_val")
COLUMNS = ("source", "destination", "time")


@dataclass
class LinkQueries:
    """M queries: ``src`` / ``dst`` (M,) int64 node ids of the graph (1..n), ``ts`` (M,) float64 query times,
    ``labels`` (M,) int64 in {0, 1} or None, ``streams``: row-index arrays, each scored in consecutive batches;
    ``history_edges`` (M,) int64 or None: for the protocol's queries, the edge id of the positive event (EdgeBank's
    memory before a batch is the edges before its first event; without them, the edges before its earliest time);
    ``description``: what the queries are, for the summary."""

    src: np.ndarray
    dst: np.ndarray
    ts: np.ndarray
    labels: np.ndarray | None
    streams: list[np.ndarray]
    history_edges: np.ndarray | None
    description: str

    def __len__(self) -> int:
        return len(self.src)


def check_options(part: str, strategy: str, limit: int) -> None:
    """``ConfigError`` (one line) unless ``part`` is one of ``PARTS``, ``strategy`` one of the negative-sampling
    strategies and ``limit`` >= 0."""
    if part not in PARTS:
        raise ConfigError(f"--split {part!r}: choose from {', '.join(PARTS)}")
    if strategy not in STRATEGIES:
        raise ConfigError(f"--negatives {strategy!r}: choose from {', '.join(STRATEGIES)}")
    if limit < 0:
        raise ConfigError(f"--limit {limit}: must be >= 0 (0: every event of the split)")


def first_negatives(datamodule, part: str, strategy: str, count: int) -> tuple[np.ndarray, np.ndarray]:
    """The protocol's negatives (src, dst) of the first ``count`` (or more) events of ``part``: the draws of
    ``datamodule.negatives``, made for the batches that hold those events only (the seeded sampler draws batch
    after batch, so the first batches' draws do not depend on the later ones)."""
    data, size = getattr(datamodule.split, part), datamodule.eval_batch_size
    if count >= len(data):
        return datamodule.negatives(part, strategy)
    end = -(-count // size) * size  # whole batches: a batch's draws depend on its size
    first = Interactions(data.src[:end], data.dst[:end], data.ts[:end], data.edge_ids[:end])
    return evaluation_negatives(first, eval_sampler(datamodule.split, part, strategy), size)


def protocol_queries(datamodule, part: str, strategy: str, limit: int = 0) -> LinkQueries:
    """The first ``limit`` (0: all) positive events of ``part`` (test / new_node_test / val / new_node_val), each
    followed by its negative as the protocol draws it with ``strategy`` (DyGLib's seeded evaluation sampler, at
    the positive's time); labels 1 / 0. ``datamodule`` must be set up."""
    check_options(part, strategy, limit)
    data = getattr(datamodule.split, part)
    if not len(data):
        raise ConfigError(f"--split {part}: the chronological split leaves no {part} events in this graph")
    n = min(limit, len(data)) if limit else len(data)
    neg_src, neg_dst = first_negatives(datamodule, part, strategy, n)

    def interleave(positive: np.ndarray, negative: np.ndarray) -> np.ndarray:
        return np.stack([positive[:n], negative[:n]], axis=1).reshape(-1)

    return LinkQueries(
        src=interleave(data.src, neg_src).astype(np.int64),
        dst=interleave(data.dst, neg_dst).astype(np.int64),
        ts=np.repeat(data.ts[:n], 2).astype(np.float64),
        labels=np.tile([1, 0], n).astype(np.int64),
        streams=[np.arange(0, 2 * n, 2), np.arange(1, 2 * n, 2)],
        history_edges=np.repeat(data.edge_ids[:n], 2).astype(np.int64),
        description=f"{n} {part} events and their {n} {strategy} negatives",
    )


def read_queries(path: str | Path, raw_ids: np.ndarray) -> LinkQueries:
    """The queries of a CSV with a header naming ``source``, ``destination``, ``time`` and optionally ``label``
    (0 / 1), node ids as in the graph's file; ``raw_ids`` (n + 1,) the file id of each graph node (``raw_ids[0]``
    unused). One stream, in file order.

    ``ConfigError`` (one line, naming the file, and the line where one is at fault; the header is line 1) for a
    missing file or column, a non-integer id, a time that is not a finite number, a label outside {0, 1} or a node
    the graph does not have."""
    import pandas as pd

    path = Path(path).expanduser()
    if not path.is_file():
        raise ConfigError(f"--queries: no file at {path} (a CSV with columns source,destination,time[,label])")
    try:
        frame = pd.read_csv(path, skipinitialspace=True)
    except (ValueError, UnicodeDecodeError, pd.errors.ParserError) as exc:
        raise ConfigError(f"--queries {path}: not a readable CSV ({str(exc).splitlines()[0]})") from None
    missing = [c for c in COLUMNS if c not in frame.columns]
    if missing:
        raise ConfigError(f"--queries {path}: no column {', '.join(missing)} (columns: {', '.join(frame.columns)})")
    if not len(frame):
        raise ConfigError(f"--queries {path}: no queries (only a header)")
    src, dst = (_node_ids(frame[c], c, path, raw_ids) for c in ("source", "destination"))
    ts = pd.to_numeric(frame["time"], errors="coerce").to_numpy(np.float64)
    bad = np.flatnonzero(~np.isfinite(ts))
    if len(bad):
        raise ConfigError(f"--queries {path}:{bad[0] + 2}: time {frame['time'][bad[0]]!r} is not a finite number")
    labels = None
    if "label" in frame.columns:
        values = frame["label"].to_numpy()
        wrong = np.flatnonzero(~np.isin(values, (0, 1)))
        if len(wrong):
            raise ConfigError(f"--queries {path}:{wrong[0] + 2}: label {values[wrong[0]]!r} is not 0 or 1")
        labels = values.astype(np.int64)
    return LinkQueries(src, dst, ts, labels, [np.arange(len(src))], None, f"{len(src)} queries of {path.name}")


def _node_ids(column, name: str, path: Path, raw_ids: np.ndarray) -> np.ndarray:
    """A column of the file's node ids as the graph's ids 1..n (``raw_ids`` is sorted from index 1)."""
    values = column.to_numpy()
    if values.dtype.kind not in "iu":
        raise ConfigError(f"--queries {path}: column {name} must hold integer node ids, got {values.dtype} values")
    known = raw_ids[1:]
    at = np.minimum(np.searchsorted(known, values), len(known) - 1)
    unknown = np.flatnonzero(known[at] != values)
    if len(unknown):
        row = unknown[0]
        raise ConfigError(
            f"--queries {path}:{row + 2}: {name} {values[row]} is not a node of the graph (the model has no "
            f"features or history for it)"
        )
    return (at + 1).astype(np.int64)
