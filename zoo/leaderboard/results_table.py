"""`ResultTable`: a task's records grouped into (method, dataset) cells, with the published numbers beside them.

The one place records are grouped: the page renderer and every declared target read cells through it.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Callable, Iterable

from zoo.leaderboard.record import RunRecord
from zoo.registry import BenchmarkRow


class ResultTable:
    """Records of one task by cell, in the benchmark's method and dataset order (unplanned ones appended).

    ``published(method, dataset, metric)`` reads the rows' ``published`` dicts: a key ``"metric"`` belongs to the
    row's own method, ``"Name:metric"`` to a method the zoo does not run (e.g. ``"iTransformer:test/mse"``).
    """

    def __init__(
        self,
        rows: Iterable[BenchmarkRow],
        records: Iterable[RunRecord],
        higher_is_better: Iterable[str] = (),
        code_version: Callable[[RunRecord], str] | None = None,
    ):
        self.rows = tuple(rows)
        self.records = list(records)
        self.higher = set(higher_is_better)
        self.code_version = code_version or (lambda r: r.source_hash or r.commit)
        self.methods = list(dict.fromkeys(r.method for r in self.rows))
        self.datasets = list(dict.fromkeys(r.dataset for r in self.rows))
        self.cells: dict[tuple[str, str], list[RunRecord]] = defaultdict(list)
        for rec in self.records:
            if rec.method not in self.methods:
                self.methods.append(rec.method)
            if rec.dataset not in self.datasets:
                self.datasets.append(rec.dataset)
            self.cells[(rec.method, rec.dataset)].append(rec)
        self._published: dict[tuple[str, str, str], float] = {}
        for row in self.rows:
            for key, value in row.published.items():
                owner, _, metric = key.rpartition(":")
                self._published[(owner or row.method, row.dataset, metric)] = value

    def records_of(self, method: str, dataset: str) -> list[RunRecord]:
        return self.cells.get((method, dataset), [])

    def values(self, method: str, dataset: str, metric: str) -> dict[tuple[int, int | None], float]:
        """(seed, fold) -> finite value of ``metric`` in that cell."""
        out = {}
        for rec in self.records_of(method, dataset):
            value = rec.metrics.get(metric)
            if value is not None and not math.isnan(value):
                out[(rec.seed, rec.fold)] = value
        return out

    def mean(self, method: str, dataset: str, metric: str) -> float:
        """Mean of the cell's finite values; NaN for an empty cell."""
        values = list(self.values(method, dataset, metric).values())
        return statistics.fmean(values) if values else math.nan

    def count(self, method: str, dataset: str, metric: str) -> int:
        return len(self.values(method, dataset, metric))

    def reduced(self, method: str, dataset: str) -> bool:
        return any(r.reduced for r in self.records_of(method, dataset))

    def published(self, method: str, dataset: str, metric: str) -> float | None:
        return self._published.get((method, dataset, metric))

    def published_columns(self, metric: str) -> list[str]:
        """Methods with a published value of ``metric`` somewhere, in benchmark order."""
        return list(dict.fromkeys(m for (m, _, name) in self._published if name == metric))

    def best_published(self, dataset: str, metric: str) -> float | None:
        values = [v for (_, d, name), v in self._published.items() if d == dataset and name == metric]
        if not values:
            return None
        return max(values) if metric in self.higher else min(values)

    def better(self, metric: str, a: float, b: float) -> bool:
        """Is ``a`` strictly better than ``b`` on ``metric``?"""
        return a > b if metric in self.higher else a < b

    def code_versions(self, method: str, dataset: str) -> list[str]:
        """The code version of each of the cell's records (``code_version``; default: fingerprint, else commit)."""
        return [self.code_version(r) for r in self.records_of(method, dataset)]
