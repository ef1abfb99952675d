"""Historical first-hop neighbours and DyGFormer's padded input sequences (DyGLib ``utils/utils.py``
``NeighborSampler.find_neighbors_before`` and ``models/DyGFormer.py`` ``pad_sequences`` /
``NeighborCooccurrenceEncoder.count_nodes_appearances``), as numpy batches.

A node's neighbours are the interactions touching it (both directions) strictly before the query time, in time
order; DyGFormer keeps the most recent ``max_length - 1`` of them after the node itself (position 0: the node, edge
id 0, its query time), pads each side of a batch to that batch's longest sequence (rounded up to a multiple of
``patch_size``) with id 0, and counts how often each sequence entry appears in the source's and in the
destination's sequence (0 for padding).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from zoo_tasks.graphs.dynamic.split import Interactions


class NeighborFinder:
    """Per-node time-sorted adjacency of ``data`` (undirected), for nodes 0..num_nodes."""

    def __init__(self, data: Interactions, num_nodes: int):
        adjacency: list[list[tuple]] = [[] for _ in range(num_nodes + 1)]
        for s, d, e, t in zip(data.src.tolist(), data.dst.tolist(), data.edge_ids.tolist(), data.ts.tolist()):
            adjacency[s].append((d, e, t))
            adjacency[d].append((s, e, t))
        self.ids, self.edges, self.times = [], [], []
        for rows in adjacency:
            rows = sorted(rows, key=lambda r: r[2])  # stable, as DyGLib's
            self.ids.append(np.array([r[0] for r in rows], dtype=np.int64))
            self.edges.append(np.array([r[1] for r in rows], dtype=np.int64))
            self.times.append(np.array([r[2] for r in rows], dtype=np.float64))

    def before(self, node: int, time: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(neighbour ids, edge ids, times) of ``node``'s interactions strictly before ``time``."""
        i = np.searchsorted(self.times[node], time)
        return self.ids[node][:i], self.edges[node][:i], self.times[node][:i]


@dataclass
class Sequences:
    """Padded sequences of one side of a batch of pairs: ids / edge_ids (B, L) int64, dt (B, L) float32
    (query time minus the neighbour's time), counts (B, L, 2) float32 (appearances in src's, dst's sequence)."""

    ids: np.ndarray
    edge_ids: np.ndarray
    dt: np.ndarray
    counts: np.ndarray | None = None


def pad_sequences(
    finder: NeighborFinder, nodes: np.ndarray, times: np.ndarray, max_length: int, patch_size: int
) -> Sequences:
    """DyGFormer's ``pad_sequences``: (B,) nodes at (B,) times -> :class:`Sequences` of length L <= max_length."""
    found = [finder.before(int(n), float(t)) for n, t in zip(nodes, times)]
    found = [tuple(a[-(max_length - 1) :] for a in f) for f in found]
    length = max((len(f[0]) for f in found), default=0) + 1
    if length % patch_size:
        length += patch_size - length % patch_size
    ids = np.zeros((len(nodes), length), dtype=np.int64)
    edges = np.zeros((len(nodes), length), dtype=np.int64)
    stamp = np.zeros((len(nodes), length), dtype=np.float32)
    ids[:, 0], stamp[:, 0] = nodes, times
    for row, (nb, eb, tb) in enumerate(found):
        ids[row, 1 : len(nb) + 1], edges[row, 1 : len(nb) + 1], stamp[row, 1 : len(nb) + 1] = nb, eb, tb
    dt = (times[:, None] - stamp).astype(np.float32)
    return Sequences(ids, edges, dt)


def count_appearances(src: Sequences, dst: Sequences) -> None:
    """Fill ``counts`` of both sides: for each entry, how often its id occurs in the source's and in the
    destination's sequence of the same pair (DyGLib's per-row ``np.unique`` counts, vectorised); 0 for padding."""
    a, b = src.ids, dst.ids
    a_in_a = (a[:, :, None] == a[:, None, :]).sum(-1)
    a_in_b = (a[:, :, None] == b[:, None, :]).sum(-1)
    b_in_a = (b[:, :, None] == a[:, None, :]).sum(-1)
    b_in_b = (b[:, :, None] == b[:, None, :]).sum(-1)
    src.counts = np.stack([a_in_a, a_in_b], -1).astype(np.float32) * (a != 0)[..., None]
    dst.counts = np.stack([b_in_a, b_in_b], -1).astype(np.float32) * (b != 0)[..., None]


def pair_sequences(
    finder: NeighborFinder, src: np.ndarray, dst: np.ndarray, times: np.ndarray, max_length: int, patch_size: int
) -> tuple[Sequences, Sequences]:
    """Both sides' sequences of a batch of (src, dst, time) pairs, with their co-occurrence counts."""
    a = pad_sequences(finder, src, times, max_length, patch_size)
    b = pad_sequences(finder, dst, times, max_length, patch_size)
    count_appearances(a, b)
    return a, b


def recent_neighbors(finder: NeighborFinder, nodes: np.ndarray, times: np.ndarray, k: int) -> Sequences:
    """DyGLib's ``get_historical_neighbors`` with the ``recent`` strategy (GraphMixer on UCI): each node's ``k``
    most recent neighbours before its time, at the back positions (front padded with id 0). (B,) -> (B, k)."""
    ids = np.zeros((len(nodes), k), dtype=np.int64)
    edges = np.zeros((len(nodes), k), dtype=np.int64)
    stamp = np.zeros((len(nodes), k), dtype=np.float32)
    for row, (n, t) in enumerate(zip(nodes, times)):
        nb, eb, tb = (a[-k:] for a in finder.before(int(n), float(t)))
        if len(nb):
            ids[row, k - len(nb) :], edges[row, k - len(nb) :], stamp[row, k - len(nb) :] = nb, eb, tb
    return Sequences(ids, edges, (times[:, None] - stamp).astype(np.float32))
