"""Re-verification of stale records by behaviour before a grid or the matrix re-runs them (``zoo.reverify``): a
short probe of each group of records at the code that wrote them and at HEAD; the records whose probes are identical
are re-stamped as current instead of re-run."""

from __future__ import annotations

from pathlib import Path

from zoo.leaderboard.matrix import MATRIX_TASK
from zoo.leaderboard.record import results_dir
from zoo.leaderboard.settings import settings_changed
from zoo.registry import TaskSpec, repository_root
from zoo.reverify.report import reverify
from zoo.reverify.runner import read_pairs, spec_overrides
from zoo.runner.matrix_cells import cell_settings_current, matrix_specs
from zoo.runner.rows import selected


def row_order(spec: TaskSpec, record) -> int:
    """The index of the record's row in ``spec.benchmark``, the order ``zoo reproduce`` runs them (a row that reads
    another row's output, e.g. a stage-2 mixture of stage-1 exports, comes after it): the probes run in that order
    in one worker, so a later stage's probe reads the earlier stages' probe outputs. Unknown rows go last."""
    for index, row in enumerate(spec.benchmark):
        if (row.method, row.dataset) == (record.method, record.dataset):
            return index
    return len(spec.benchmark)


def reverify_stale(spec: TaskSpec, leaderboard: Path, only: list[str], exclude: list[str], dry_run: bool) -> int:
    """Re-verify the task's stale records of the rows ``only`` / ``exclude`` select, re-stamping those whose probes
    match; how many were re-stamped. Records of other settings than their row's now are left to a re-run."""
    paths = sorted(results_dir(spec.name, leaderboard).glob("*.json"))
    pairs = [(p, r) for p, r in read_pairs(paths) if selected(f"{r.method}/{r.dataset}", only, exclude)]
    pairs.sort(key=lambda pair: row_order(spec, pair[1]))
    eligible = lambda rec: not settings_changed(spec, rec)  # noqa: E731
    plan = reverify(spec.name, pairs, repository_root(), eligible, dry_run, overrides=spec_overrides(lambda _: spec))
    return sum(len(d.group.records) for d in plan.restamped())


def reverify_cells(only: list[str], leaderboard: Path, dry_run: bool) -> int:
    """Re-verify the stale matrix records of the tasks ``only`` names (default: all), re-stamping those whose probes
    match; how many were re-stamped. Records of other cell settings than today's are left to a re-run."""
    specs = {spec.name: spec for spec in matrix_specs(only)}
    paths = sorted(results_dir(MATRIX_TASK, leaderboard).glob("*.json"))
    pairs = [(p, r) for p, r in read_pairs(paths) if r.dataset in specs]
    plan = reverify(
        MATRIX_TASK,
        pairs,
        repository_root(),
        lambda rec: cell_settings_current(specs[rec.dataset], rec),
        dry_run,
        overrides=spec_overrides(lambda rec: specs[rec.dataset]),
    )
    return sum(len(d.group.records) for d in plan.restamped())
