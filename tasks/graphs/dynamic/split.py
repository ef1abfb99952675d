"""DyGLib's chronological link-prediction split, transductive and inductive (``utils/DataLoader.py``,
``get_link_prediction_data``), line for line.

- ``val_time, test_time = np.quantile(ts, [0.70, 0.85])``; train: ``ts <= val_time``, val:
  ``val_time < ts <= test_time``, test: ``ts > test_time``.
- Inductive: ``random.seed(2020)``; among the nodes of edges after ``val_time`` (a set built as
  ``set(src[ts > val_time]).union(set(dst[ts > val_time]))``), ``int(0.1 * num_nodes)`` are sampled and every
  edge touching one of them is removed from training. DyGLib calls ``random.sample(set, k)``, which Python <= 3.10
  turns into ``random.sample(tuple(set), k)``; we write that tuple explicitly (Python 3.11 refuses sets), with
  a private ``random.Random(2020)``: the same draws as the global seed, without touching global state.
- New-node val/test edges: val/test edges with an endpoint never seen in (the reduced) training data.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np

from zoo_tasks.graphs.dynamic.events import TemporalGraph

NEW_NODE_SEED = 2020


@dataclass
class Interactions:
    """A subset of a :class:`TemporalGraph`'s interactions (DyGLib's ``Data``); arrays of shape (M,)."""

    src: np.ndarray
    dst: np.ndarray
    ts: np.ndarray
    edge_ids: np.ndarray

    @classmethod
    def of(cls, graph: TemporalGraph, mask: np.ndarray | None = None) -> Interactions:
        mask = np.ones(graph.num_interactions, dtype=bool) if mask is None else mask
        return cls(graph.src[mask], graph.dst[mask], graph.ts[mask], graph.edge_ids[mask])

    def __len__(self) -> int:
        return len(self.src)

    @property
    def num_nodes(self) -> int:
        return len(set(self.src) | set(self.dst))


@dataclass
class LinkSplit:
    """The six interaction sets of DyGLib's link-prediction protocol and the two cut times."""

    full: Interactions
    train: Interactions
    val: Interactions
    test: Interactions
    new_node_val: Interactions
    new_node_test: Interactions
    val_time: float
    test_time: float
    new_test_nodes: frozenset

    def sizes(self) -> dict[str, int]:
        """Interactions per set and the number of masked (unseen) nodes, for the run record."""
        parts = ("full", "train", "val", "test", "new_node_val", "new_node_test")
        return {**{p: len(getattr(self, p)) for p in parts}, "masked_new_nodes": len(self.new_test_nodes)}


def link_prediction_split(graph: TemporalGraph, val_ratio: float = 0.15, test_ratio: float = 0.15) -> LinkSplit:
    """DyGLib's ``get_link_prediction_data`` on ``graph`` (see the module docstring)."""
    src, dst, ts = graph.src, graph.dst, graph.ts
    val_time, test_time = list(np.quantile(ts, [(1 - val_ratio - test_ratio), (1 - test_ratio)]))
    rng = random.Random(NEW_NODE_SEED)
    node_set = set(src) | set(dst)
    test_node_set = set(src[ts > val_time]).union(set(dst[ts > val_time]))
    new_test_node_set = set(rng.sample(tuple(test_node_set), int(0.1 * len(node_set))))
    new_src = np.array([x in new_test_node_set for x in src])
    new_dst = np.array([x in new_test_node_set for x in dst])
    observed = ~new_src & ~new_dst
    train_mask = (ts <= val_time) & observed
    train = Interactions.of(graph, train_mask)
    train_nodes = set(train.src).union(train.dst)
    assert not train_nodes & new_test_node_set
    new_node_set = node_set - train_nodes
    val_mask = (ts <= test_time) & (ts > val_time)
    test_mask = ts > test_time
    has_new = np.array([s in new_node_set or d in new_node_set for s, d in zip(src, dst)])
    return LinkSplit(
        full=Interactions.of(graph),
        train=train,
        val=Interactions.of(graph, val_mask),
        test=Interactions.of(graph, test_mask),
        new_node_val=Interactions.of(graph, val_mask & has_new),
        new_node_test=Interactions.of(graph, test_mask & has_new),
        val_time=float(val_time),
        test_time=float(test_time),
        new_test_nodes=frozenset(int(x) for x in new_test_node_set),
    )
