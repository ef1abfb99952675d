"""How long the runs a ``zoo reproduce --dry-run`` lists take one process, from the wall times of records."""

from __future__ import annotations

from zoo.leaderboard.record import RunRecord
from zoo.leaderboard.settings import settings_changed
from zoo.registry import BenchmarkRow, TaskSpec


def duration(seconds: float) -> str:
    """``seconds`` as a person reads it: seconds, minutes or hours."""
    if seconds < 120:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.0f} min" if seconds < 7200 else f"{seconds / 3600:.1f} h"


def time_to_do(spec: TaskSpec, todo: list[tuple[BenchmarkRow, int, int | None]], records: list[RunRecord]) -> str:
    """How long the runs ``todo`` take one process, from the wall times of their rows' records that ran with the
    row's current settings (``settings_changed``; older code counts: a re-run costs about what the run it replaces
    cost, while a record of other settings, say fewer epochs, says nothing about it). A run whose row has no such
    record is estimated from the other methods' current-settings records on its dataset (same data and schedule
    as a rule, other model), and the line says how many were; with neither it is left out, and the line says so."""
    by_row: dict[tuple[str, str], list[float]] = {}
    by_dataset: dict[str, list[float]] = {}
    for rec in records:
        if not settings_changed(spec, rec):
            by_row.setdefault((rec.method, rec.dataset), []).append(rec.wall_time_s)
            by_dataset.setdefault(rec.dataset, []).append(rec.wall_time_s)
    known, from_siblings = [], 0
    for row, _, _ in todo:
        if (row.method, row.dataset) in by_row:
            known.append(by_row[(row.method, row.dataset)])
        elif row.dataset in by_dataset:
            known.append(by_dataset[row.dataset])
            from_siblings += 1
    if not known:
        return "how long: unknown, no record of their rows or datasets ran with the rows' current settings"
    seconds = sum(sum(t) / len(t) for t in known)
    line = f"about {duration(seconds)} of one process at the wall times recorded for their rows' settings"
    if from_siblings:
        line += f"; {from_siblings} of the {len(todo)} runs estimated from other methods' runs on their dataset"
    if len(known) < len(todo):
        line += (
            f"; not counted: {len(todo) - len(known)} of the {len(todo)} runs, whose rows and datasets have no such "
            "record"
        )
    return line
