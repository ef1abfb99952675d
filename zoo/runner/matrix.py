"""The router x task table (``zoo reproduce matrix``, issue 26): rows that vary the router, resumable, one record per
tested run.

For every task whose spec names a :class:`~zoo.registry.MatrixRow`, and for its dense twin and every router asked
for: build the model once with that router (a router that cannot route the task's mixture refuses with a
ConfigError, whose line becomes the cell's reason, ``zoo.runner.matrix_na``), tune the cell with ``zoo tune``'s study
(the row's declared space plus the router's knobs, the same number of trials for every cell), then fit and test the
chosen config on the row's benchmark seeds (times its folds, ``zoo.runner.matrix_runs``). The runs a row's model
needs before it can be built (``StagedMatrixRow.requires``) go first (``zoo.runner.matrix_requires``). Records go to
``leaderboard/results/router_matrix/`` and the page to ``leaderboard/router_matrix.md``.

Two processes can share the table (the same command twice): a lock per run and per study keeps them apart, and a
process that meets a cell the other one is tuning goes on with its next cell and comes back to it at the end.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from zoo.leaderboard.matrix import MATRIX_TASK, read_not_applicable
from zoo.leaderboard.record import RunRecord, read_records, record_key
from zoo.registry import TaskSpec
from zoo.runner.matrix_cells import cell_is_current, cell_record_path, cell_runs, cells, matrix_specs
from zoo.runner.matrix_na import applies_now
from zoo.runner.matrix_page import page
from zoo.runner.matrix_requires import requirements_to_do, run_requirements
from zoo.runner.matrix_runs import CellToRun, run_cell
from zoo.runner.matrix_time import MatrixTime
from zoo.runner.matrix_tuning import is_tuned
from zoo.runner.reproduce import GridOptions
from zoo.runner.reverification import reverify_cells
from zoo.runner.rows import find_row
from zoo.tuning.matrix_row import requires


@dataclass
class _TaskRow:
    """What the cells of one task's matrix row are judged against: the table's records and n/a marks, and, for a
    dry run, the records that time its runs."""

    spec: TaskSpec
    records: list[RunRecord]
    skipped: dict
    current_records: list[RunRecord] = field(default_factory=list)
    benchmark_records: list[RunRecord] = field(default_factory=list)

    def current(self, rec: RunRecord) -> bool:
        """Whether ``rec`` is a current record of this task's cells (``cell_is_current``)."""
        return cell_is_current(self.spec, rec)


def _time_task_row(task: _TaskRow, runs: Path, leaderboard: Path, timing: MatrixTime) -> None:
    """Dry run: gather the records that time the row's runs and time the runs its row needs first."""
    spec = task.spec
    task.benchmark_records = read_records(spec.name, leaderboard)
    # a stale record ran other code or settings: its wall time says nothing of the runs to do
    task.current_records = [rec for rec in task.records if rec.dataset == spec.name and task.current(rec)]
    for text, *_ in requirements_to_do(spec, runs):
        timing.add_required(find_row(spec, text), task.benchmark_records)


def _task_cells(task: _TaskRow, routers, options, leaderboard: Path, runs: Path, timing: MatrixTime) -> int:
    """Run (or, dry, time) the cells of one task's row that have runs to do; the number of runs that failed."""
    spec, failures, deferred = task.spec, 0, []
    done = {
        rec.key() for rec in task.records if rec.dataset == spec.name and (not options.rerun_stale or task.current(rec))
    }
    for label, row, router in cells(spec, routers):
        todo = [(s, f) for s, f in cell_runs(spec, row) if record_key(label, spec.name, s, f) not in done]
        refused = (spec.name, label) in task.skipped
        reprobe = refused and options.rerun_stale and not options.dry_run
        probed = reprobe and applies_now(spec, row, router, runs, leaderboard)
        if refused and not probed:
            continue
        if not todo:
            continue
        stale = sum(cell_record_path(spec, label, s, f, leaderboard).exists() for s, f in todo)
        print(
            f"{spec.name} / {label}: {len(todo)} runs to do" + (f", {stale} of them stale" if stale else ""),
            flush=True,
        )
        if options.dry_run:
            trials = 0 if is_tuned(spec, label, row, router, runs, task.records, task.current) else spec.matrix.trials
            timing.add(label, row, len(todo), trials, task.current_records, task.benchmark_records)
            continue
        cell = CellToRun(label, row, router, todo, stale, probed)
        result = run_cell(spec, cell, options.rerun_stale, leaderboard, runs, task.records, wait=False)
        if result is None:
            deferred.append(cell)
        else:
            failures += result
    for cell in deferred:  # their studies ran in another process meanwhile
        failures += run_cell(spec, cell, options.rerun_stale, leaderboard, runs, task.records, wait=True)
    return failures


def run_matrix(routers: list[str], options: GridOptions, leaderboard: Path, runs: Path) -> int:
    """Re-verify (``reverify_only``, or ``rerun_stale`` without ``no_reverify``), time (``dry_run``) or run the
    table's cells of ``routers`` (and the dense twins) of the tasks ``options.only`` names (default: all); the exit
    status (1 when a run failed)."""
    if options.reverify_only or (options.rerun_stale and not options.no_reverify):
        restamped = reverify_cells(options.only, leaderboard, options.dry_run)
        if options.reverify_only:
            if restamped:
                print(page(leaderboard))
            return 0
    records = read_records(MATRIX_TASK, leaderboard)
    skipped = read_not_applicable(leaderboard)
    failures, timing = 0, MatrixTime()
    for spec in matrix_specs(options.only):
        if requires(spec.matrix):
            failed = run_requirements(spec, runs, options.dry_run)
            if failed:
                print(f"{spec.name}: {failed} of the runs its row needs failed; its cells are skipped", flush=True)
                failures += failed
                continue
        task = _TaskRow(spec, records, skipped)
        if options.dry_run:
            _time_task_row(task, runs, leaderboard, timing)
        failures += _task_cells(task, routers, options, leaderboard, runs, timing)
    if options.dry_run:
        if timing.runs or timing.trials or timing.uncounted:
            print(timing.line() + "; cells not yet built with their router count in full (some may turn out n/a)")
    else:
        print(page(leaderboard))
    return 1 if failures else 0
