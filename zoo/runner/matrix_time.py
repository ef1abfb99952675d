"""How long the runs ``zoo reproduce matrix --dry-run`` lists take one process, from recorded wall times.

A run of a cell is timed by the current records (``cell_is_current``: a stale record ran other code or settings,
e.g. half the steps, so its time is no evidence) that ran closest to its settings: the cell's own records, else those
of the row's other cells of the same kind (router cells, or the dense twin), else of its other cells (the same matrix
settings, the other model), else the task's benchmark records of the cell's row (its benchmark settings: an upper
bound where the matrix shortens the row, as it usually does). A cell still to tune adds its trials, each timed like a
run (a pruned trial stops early: an upper bound). Runs with none of these records are not counted, and the line says
how many.
"""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass, field

from zoo.leaderboard.matrix import DENSE
from zoo.leaderboard.record import RunRecord
from zoo.registry import BenchmarkRow
from zoo.runner.grid_time import duration

SOURCES = (
    "the cells' own records",
    "their rows' cells of the same kind",
    "their rows' other cells",
    "benchmark records of their rows",
)


@dataclass
class MatrixTime:
    """Sums the estimate over cells; ``line()`` says it."""

    seconds: float = 0.0
    runs: int = 0
    trials: int = 0
    uncounted: int = 0
    sources: Counter = field(default_factory=Counter)

    def add(
        self,
        label: str,
        row: BenchmarkRow,
        runs: int,
        trials: int,
        matrix_records: list[RunRecord],
        benchmark_records: list[RunRecord],
    ) -> None:
        """``runs`` tested runs and ``trials`` tuning trials of cell ``label`` (records of its task only)."""
        same_kind = [r for r in matrix_records if (r.method == DENSE) == (label == DENSE)]
        for source, records in zip(
            SOURCES,
            (
                [r for r in matrix_records if r.method == label],
                same_kind,
                matrix_records,
                [r for r in benchmark_records if (r.method, r.dataset) == (row.method, row.dataset)],
            ),
            strict=True,
        ):
            if records:
                self.seconds += (runs + trials) * statistics.fmean(r.wall_time_s for r in records)
                self.runs, self.trials = self.runs + runs, self.trials + trials
                self.sources[source] += runs + trials
                return
        self.uncounted += runs + trials

    def add_required(self, row: BenchmarkRow, benchmark_records: list[RunRecord]) -> None:
        """One run of a row the matrix row needs first, timed by the row's benchmark records."""
        self.add(row.method, row, 1, 0, [], benchmark_records)

    def line(self) -> str:
        if not self.sources:
            return "how long: unknown, no record of these cells, their rows' other cells or their benchmark rows"
        said = ", ".join(f"{n} by {source}" for source, n in self.sources.items())
        text = f"about {duration(self.seconds)} of one process: {self.runs} runs and {self.trials} tuning trials"
        text += f", timed {said}"
        if self.uncounted:
            text += f"; not counted: {self.uncounted} runs without such records"
        return text
