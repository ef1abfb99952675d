"""The runs of one cell of the router x task table: probe the router, tune the cell (or read its tuning back), then
fit and test each of its (seed, fold) runs with the tuned values and write its record."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from pathlib import Path

from zoo.cli.fit_test import fit_and_test
from zoo.leaderboard.matrix import DENSE, MATRIX_TASK, write_not_applicable
from zoo.leaderboard.record import RunRecord, record_key, record_path
from zoo.leaderboard.settings import settings_fingerprint
from zoo.registry import BenchmarkRow, TaskSpec
from zoo.runner.matrix_cells import CELL_SETTINGS, cell_args, cell_is_current
from zoo.runner.matrix_na import probe, remove_cell_records
from zoo.runner.matrix_page import page
from zoo.runner.matrix_tuning import recorded_tuning
from zoo.runner.recorded_run import DONE, FAILED, HELD, RecordedRun, record_run
from zoo.runner.records import record_of
from zoo.runner.run_lock import RunLock
from zoo.runner.stop_signal import stop_if_asked
from zoo.runner.tuning import study_folder, tune_row
from zoo.tuning.matrix_row import cell_overrides


@dataclass(frozen=True)
class CellToRun:
    """One cell of a task's matrix row with runs left to do: its ``label`` (``"dense"`` or the router), the benchmark
    ``row`` and ``router`` (None for the dense twin) it runs, the (seed, fold) ``todo``, how many of those replace a
    ``stale`` record, and whether the model was just ``probed`` with the router (an n/a cell re-probed by
    ``--rerun-stale``), so it is not built again."""

    label: str
    row: BenchmarkRow
    router: str | None
    todo: list[tuple[int, int | None]]
    stale: int
    probed: bool


def run_cell_run(
    spec: TaskSpec,
    cell: CellToRun,
    run: tuple[int, int | None],
    tuned,
    runs: Path,
    leaderboard: Path,
    rerun_stale: bool,
) -> int:
    """Fit and test one ``run`` (seed, fold) of ``cell`` with its tuned values and write its record
    (``zoo.runner.recorded_run``: replacing a stale one with ``rerun_stale``); 1 when it failed or gave no finite
    test metric, else 0."""
    label, row, (seed, fold) = cell.label, cell.row, run
    key = record_key(label, spec.name, seed, fold)
    args = cell_args(spec, label, seed, fold)
    settings = settings_fingerprint(args)
    run_dir = runs / "reproduce" / MATRIX_TASK / f"{spec.name}__{key}"
    recorded = RecordedRun(key, run_dir, record_path(MATRIX_TASK, key, leaderboard), [*args, *tuned.overrides])

    def fit() -> RunRecord:
        result = fit_and_test(list(recorded.args), run_dir)
        extra = {**result.extra, "tuning": tuned.to_dict(), "row": f"{row.method}/{row.dataset}"}
        extra[CELL_SETTINGS] = settings
        overrides = " ".join(cell_overrides(spec.matrix, None if label == DENSE else label)) or "its settings"
        note = f"{row.method}/{row.dataset} with {overrides}"
        return record_of(result, MATRIX_TASK, label, spec.name, seed, fold, True, note, extra)

    outcome = record_run(recorded, fit, leaderboard, rerun_stale, partial(cell_is_current, spec))
    if outcome.status == HELD:
        print(f"  {key}: another process runs it", flush=True)
    if outcome.status == FAILED:
        return 1
    if outcome.status == DONE:
        change = outcome.change()
        print(f"  {key}: {outcome.record.metrics}" + (f" ({change})" if change else ""), flush=True)
        return int(not outcome.finite)
    return 0


def run_cell(
    spec: TaskSpec, cell: CellToRun, rerun_stale: bool, leaderboard: Path, runs: Path, records, wait: bool
) -> int | None:
    """Probe, tune and run the runs ``cell.todo`` of one cell; the number that failed. None, without ``wait``, when
    the cell's study is being run by another process sharing the table: the caller comes back to it after its other
    cells, so two processes tune two cells at once instead of one waiting for the other."""
    label, row, router = cell.label, cell.row, cell.router
    stop_if_asked(f"{spec.name} / {label}")
    matrix = spec.matrix
    if router is not None and not cell.probed:
        reason = probe(spec, row, router, runs)
        if reason is not None:
            print(f"  n/a: {reason}", flush=True)
            write_not_applicable(spec.name, router, reason, leaderboard)
            remove_cell_records(spec, label, row, leaderboard)
            return 0
    tuned = recorded_tuning(records, spec.name, label, matrix.trials, lambda rec: cell_is_current(spec, rec))
    if tuned is not None:
        print(f"  tuning read back from the cell's records: {' '.join(tuned.overrides)}", flush=True)
    else:
        if not wait and RunLock(study_folder(spec, row, router, runs)).held_elsewhere():
            print("  another process tunes this cell; back to it after the others", flush=True)
            return None
        # a stale cell's study from before studies named their code is not read back either
        extra = cell_overrides(matrix, router)
        tuned = tune_row(
            spec, row, matrix.trials, router, extra, runs=runs, wait=True, unmarked_is_other=cell.stale > 0
        )
    failures = 0
    for run in cell.todo:
        failures += run_cell_run(spec, cell, run, tuned, runs, leaderboard, rerun_stale)
        page(leaderboard)
    return failures
