"""DyGLib's negative edge sampler (``utils/utils.py``, ``NegativeEdgeSampler``; Poursafaei et al., NeurIPS 2022)
and its evaluation loop's use of it (``evaluate_models_utils.py``), ported with the same random draws.

- ``random``: ``randint`` over the unique source ids and the unique destination ids of the sampler's data; the
  evaluation loop keeps the positive sources (``neg_src = src``) and uses only the destinations.
- ``historical``: edges seen before the batch start (not in the batch) first, topped up with random
  non-batch edges (collision check) when there are too few.
- ``inductive``: like historical, among edges seen before the batch but not during training/validation
  (``last_observed_time``).

Evaluation samplers are seeded (val 0, new-node val 1, test 2, new-node test 3) and reset before every
evaluation, so every evaluation sees the same negatives: :func:`evaluation_negatives` draws them once.
"""

from __future__ import annotations

import numpy as np

from zoo.errors import ConfigError
from zoo_tasks.graphs.dynamic.split import Interactions, LinkSplit

STRATEGIES = ("random", "historical", "inductive")
EVAL_SEEDS = {"val": 0, "new_node_val": 1, "test": 2, "new_node_test": 3}


class NegativeEdgeSampler:
    """Port of DyGLib's sampler; ``src``/``dst``/``ts`` (M,) are the interactions it samples from."""

    def __init__(
        self,
        src: np.ndarray,
        dst: np.ndarray,
        ts: np.ndarray | None = None,
        last_observed_time: float | None = None,
        strategy: str = "random",
        seed: int | None = None,
    ):
        if strategy not in STRATEGIES:
            raise ConfigError(f"negative_sampling={strategy!r}; valid: {', '.join(STRATEGIES)}")
        self.strategy, self.seed = strategy, seed
        self.src, self.dst, self.ts = src, dst, ts
        self.unique_src = np.unique(src)
        self.unique_dst = np.unique(dst)
        self.last_observed_time = last_observed_time
        self._possible: set | None = None
        if strategy != "random":
            self.earliest_time = min(np.unique(ts))
        if strategy == "inductive":
            self.observed_edges = self._edges_between(self.earliest_time, last_observed_time)
        self.random_state = np.random.RandomState(seed) if seed is not None else np.random.mtrand._rand

    @property
    def possible_edges(self) -> set:
        # DyGLib builds this in __init__; built on first use here (same set, same iteration order)
        if self._possible is None:
            self._possible = set((s, d) for s in self.unique_src for d in self.unique_dst)
        return self._possible

    def reset_random_state(self) -> None:
        self.random_state = np.random.RandomState(self.seed)

    def _edges_between(self, start: float, end: float) -> set:
        keep = (self.ts >= start) & (self.ts <= end)
        return set((s, d) for s, d in zip(self.src[keep], self.dst[keep]))

    def sample(self, size: int, batch_src=None, batch_dst=None, start: float = 0.0, end: float = 0.0):
        """(neg_src, neg_dst), each (size,) int64."""
        if self.strategy == "random":
            i = self.random_state.randint(0, len(self.unique_src), size)
            j = self.random_state.randint(0, len(self.unique_dst), size)
            return self.unique_src[i], self.unique_dst[j]
        history = self._edges_between(self.earliest_time, start)
        batch = self._edges_between(start, end)
        pool = history - batch if self.strategy == "historical" else history - self.observed_edges - batch
        pool_src = np.array([e[0] for e in pool])
        pool_dst = np.array([e[1] for e in pool])
        if size > len(pool):
            rand_src, rand_dst = self._random_without_collision(size - len(pool), batch_src, batch_dst)
            neg_src, neg_dst = np.concatenate([rand_src, pool_src]), np.concatenate([rand_dst, pool_dst])
        else:
            idx = self.random_state.choice(len(pool), size=size, replace=False)
            neg_src, neg_dst = pool_src[idx], pool_dst[idx]
        return neg_src.astype(np.int64), neg_dst.astype(np.int64)

    def _random_without_collision(self, size: int, batch_src, batch_dst):
        batch = set((s, d) for s, d in zip(batch_src, batch_dst))
        candidates = list(self.possible_edges - batch)
        idx = self.random_state.choice(len(candidates), size=size, replace=len(candidates) < size)
        return np.array([candidates[i][0] for i in idx]), np.array([candidates[i][1] for i in idx])


def eval_sampler(split: LinkSplit, part: str, strategy: str) -> NegativeEdgeSampler:
    """The sampler DyGLib's evaluation builds for ``part`` (val / new_node_val / test / new_node_test)."""
    data = split.full if part in ("val", "test") else getattr(split, part)
    last = split.train.ts[-1] if part.endswith("val") else split.val.ts[-1]
    if strategy == "random":
        return NegativeEdgeSampler(data.src, data.dst, seed=EVAL_SEEDS[part])
    return NegativeEdgeSampler(data.src, data.dst, data.ts, float(last), strategy, seed=EVAL_SEEDS[part])


def evaluation_negatives(
    data: Interactions, sampler: NegativeEdgeSampler, batch_size: int
) -> tuple[np.ndarray, np.ndarray]:
    """The negatives DyGLib's evaluation loop draws for ``data`` in batches of ``batch_size`` (after
    ``reset_random_state``): (neg_src, neg_dst), each (len(data),)."""
    sampler.reset_random_state()
    neg_src, neg_dst = [], []
    for start in range(0, len(data), batch_size):
        sl = slice(start, start + batch_size)
        s, d, t = data.src[sl], data.dst[sl], data.ts[sl]
        if sampler.strategy == "random":
            _, nd = sampler.sample(len(s))
            ns = s
        else:
            ns, nd = sampler.sample(len(s), s, d, t[0], t[-1])
        neg_src.append(ns)
        neg_dst.append(nd)
    if not neg_src:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    return np.concatenate(neg_src).astype(np.int64), np.concatenate(neg_dst).astype(np.int64)
