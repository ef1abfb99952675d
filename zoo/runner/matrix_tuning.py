"""A matrix cell's tuned values: read back from its current records, or from its finished study.

The study lives under ``runs/`` and is gone on another machine: re-tuning there would spend the cell's trials again
and could choose other values than its recorded seeds were run with. Reading the choice back keeps every seed of a
cell on one tuned config.
"""

from __future__ import annotations

from pathlib import Path

from zoo.registry import BenchmarkRow, TaskSpec
from zoo.runner.tuning import finished_study
from zoo.tuning.matrix_row import cell_overrides


def recorded_tuning(records, task: str, label: str, trials: int, current=None):
    """The ``TuneResult`` a cell's existing records were tested with, when a record holding it is current
    (``current(record)``; default: written by the code installed now, ``written_by_current_code``) and its study
    had at least ``trials`` trials; else None."""
    from zoo.leaderboard.provenance import written_by_current_code
    from zoo.tuning.study import recorded_choice

    current = current or (lambda rec: written_by_current_code(rec) is True)
    for rec in records:
        tuned = recorded_choice(rec.extra)
        if rec.dataset != task or rec.method != label or tuned is None or tuned.trials < trials:
            continue
        if current(rec):
            return tuned
    return None


def is_tuned(spec: TaskSpec, label: str, row: BenchmarkRow, router: str | None, runs: Path, records, current) -> bool:
    """Whether the cell needs no more tuning: its current records hold the choice, or its study has finished with
    today's code and settings."""
    trials = spec.matrix.trials
    if recorded_tuning(records, spec.name, label, trials, current) is not None:
        return True
    return finished_study(spec, row, trials, router, cell_overrides(spec.matrix, router), runs=runs) is not None
