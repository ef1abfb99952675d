"""The grid of a task's benchmark rows (``zoo reproduce TASK``): one record per (seed, fold), resumable.

A row already recorded is skipped (with ``rerun_stale``, only when its record was written by the current code: the
others are run again and replaced). A row whose run was killed resumes from its ``last.ckpt`` when the code and
settings that started it are unchanged (``zoo.runner.run_folder``), else starts afresh. Several processes may work
on one grid at once: each run is claimed with a lock (``zoo.runner.run_lock``) and skipped by the others while it
is held. ``quick`` adds each row's ``quick_overrides`` (a smoke run).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from zoo.cli.fit_test import fit_and_test, last_checkpoint
from zoo.leaderboard.record import RunRecord, read_records, record_key, record_path, results_dir
from zoo.leaderboard.settings import SETTINGS_KEY, is_current, row_args, settings_fingerprint
from zoo.registry import BenchmarkRow, TaskSpec
from zoo.runinfo import git_commit
from zoo.runner.grid_time import time_to_do
from zoo.runner.pages import write_pages
from zoo.runner.recorded_run import DONE, FAILED, HELD, RECORDED, Outcome, RecordedRun, record_run
from zoo.runner.records import record_of
from zoo.runner.reverification import reverify_stale
from zoo.runner.rows import selected
from zoo.runner.run_folder import checkpoint_from_other_code, holds_old_run
from zoo.runner.run_lock import RunLock
from zoo.runner.task_home import task_home
from zoo.runner.tuning import tune_row

# Pages are regenerated from all of a task's records (a few seconds for MAMMOTH's 2,250): after a run only when this
# long has passed since the last write, and always at the end; `zoo render TASK` rebuilds them from the records.
PAGE_INTERVAL_S = 120.0


@dataclass(frozen=True)
class GridOptions:
    """Which runs of a task's grid to do and how: ``zoo reproduce``'s options of the same names."""

    only: list[str] = field(default_factory=list)
    exclude: list[str] = field(default_factory=list)
    quick: bool = False
    interleave: bool = False
    rerun_stale: bool = False
    reverify_only: bool = False
    no_reverify: bool = False
    dry_run: bool = False


@dataclass
class GridTally:
    """What went wrong in a grid: runs without a finite test metric (``failures``) and runs that raised (``failed``,
    their keys; no record written)."""

    failures: int = 0
    failed: list[str] = field(default_factory=list)

    def count(self, outcome: Outcome, key: str, label: str, folder: Path) -> None:
        """Say what became of the run ``key`` (``label``: its place in the grid and its key; ``folder``: where its
        record went) and count what went wrong."""
        if outcome.status == HELD:
            print(f"{label}: skipped, another process runs it ({outcome.holder})", flush=True)
        elif outcome.status == RECORDED:
            print(f"{label}: skipped, recorded meanwhile", flush=True)
        elif outcome.status == FAILED:
            self.failed.append(key)
        else:
            if outcome.old is not None:
                print(f"  {outcome.change()}", flush=True)
            if not outcome.finite:
                print(f"  no finite test metrics for {key}: {outcome.record.metrics}", flush=True)
                self.failures += 1
            print(f"  {outcome.record.metrics}  ({outcome.record.wall_time_s:.1f} s) -> {folder}", flush=True)


def run_one(
    spec: TaskSpec,
    row: BenchmarkRow,
    seed: int,
    fold: int | None,
    quick: bool,
    run_dir: Path,
    args: list[str] | None = None,
) -> RunRecord:
    """Fit then test one (row, seed, fold) with its ``zoo fit`` arguments (``args``, when the caller has built them:
    ``row_args``); return its record (not yet written), naming the commit of the project that holds the task
    (``zoo.runner.task_home``; a plugin's record also keeps the core's as ``extra["zoo_commit"]``)."""
    args, tuning = args if args is not None else row_args(spec, row, seed, fold, quick), None
    settings = settings_fingerprint(args)
    if row.tune_trials and not quick:
        tuning = tune_row(spec, row, row.tune_trials, runs=run_dir.parents[2], wait=True)
        args = [*args, *tuning.overrides]
    result = fit_and_test(args, run_dir)
    result.extra[SETTINGS_KEY] = settings
    if tuning is not None:
        result.extra["tuning"] = tuning.to_dict()
    home = task_home(spec)
    if home.package is not None:
        result.extra["zoo_commit"] = git_commit()
    note = ("quick smoke settings; " if quick else "") + row.note
    reduced = row.reduced or quick
    return record_of(result, spec.name, row.method, row.dataset, seed, fold, reduced, note, commit=home.commit())


def _dry_run_line(args: list[str], row: BenchmarkRow, seed: int, fold: int | None, runs_dir: Path, record: Path) -> str:
    """One run to do, with what its folder says: held by another process now, an old run's final checkpoint to
    set aside (``set_aside_old_run``), a killed run's checkpoint from other code or settings
    (``set_aside_other_code``), or a killed run's checkpoint to resume."""
    line = f"  {row.method} / {row.dataset} seed={seed}" + (f" fold={fold}" if fold is not None else "")
    run_dir = runs_dir / record_key(row.method, row.dataset, seed, fold)
    lock = RunLock(run_dir)
    if lock.held_elsewhere():
        line += f"  (running: {lock.holder()})"
    elif holds_old_run(run_dir, record):
        line += "  (runs afresh: the old run's folder is set aside)"
    elif checkpoint_from_other_code(run_dir, args):
        line += "  (runs afresh: its checkpoint came from other code or settings)"
    elif last_checkpoint(run_dir).exists():
        line += "  (resumes from last.ckpt)"
    return line


def runs_to_do(
    spec: TaskSpec, records: list[RunRecord], options: GridOptions
) -> tuple[list[tuple[BenchmarkRow, int, int | None]], set[str]]:
    """The (row, seed, fold) runs of the rows ``options`` select that have no record (with ``rerun_stale``, no
    current one), in row order or ``interleave``d; and the keys of the records that count as done."""
    done = {rec.key() for rec in records if not options.rerun_stale or is_current(spec, rec)}
    todo = []
    for row in spec.benchmark:
        if not selected(f"{row.method}/{row.dataset}", options.only, options.exclude):
            continue
        for seed, fold in row.runs():
            if record_key(row.method, row.dataset, seed, fold) not in done:
                todo.append((row, seed, fold))
    if options.interleave:
        todo.sort(key=lambda item: (item[1], -1 if item[2] is None else item[2]))  # stable: row order kept
    return todo, done


def _list_runs(spec, todo, records, quick: bool, leaderboard: Path, runs_dir: Path) -> None:
    """``--dry-run``: each run to do with what its folder says, then about how long they take."""
    for row, seed, fold in todo:
        record_file = record_path(spec.name, record_key(row.method, row.dataset, seed, fold), leaderboard)
        args = row_args(spec, row, seed, fold, quick)
        print(_dry_run_line(args, row, seed, fold, runs_dir, record_file))
    if todo:
        print(time_to_do(spec, todo, records))


def run_grid(spec: TaskSpec, todo, options: GridOptions, leaderboard: Path, runs_dir: Path) -> GridTally:
    """Run the runs ``todo`` one after the other (``zoo.runner.recorded_run``: skipping those another process holds
    or has recorded meanwhile), re-rendering the task's page every ``PAGE_INTERVAL_S``; what went wrong."""
    tally = GridTally()
    pages_written = time.monotonic()
    current = partial(is_current, spec)
    for i, (row, seed, fold) in enumerate(todo, 1):
        key = record_key(row.method, row.dataset, seed, fold)
        args = row_args(spec, row, seed, fold, options.quick)
        run = RecordedRun(key, runs_dir / key, record_path(spec.name, key, leaderboard), args)
        label = f"[{i}/{len(todo)}] {key}"
        fit = partial(run_one, spec, row, seed, fold, options.quick, run.run_dir, args)
        outcome = record_run(run, fit, leaderboard, options.rerun_stale, current, label)
        tally.count(outcome, key, label, results_dir(spec.name, leaderboard))
        if outcome.status == DONE and time.monotonic() - pages_written >= PAGE_INTERVAL_S:
            write_pages(spec, leaderboard)
            pages_written = time.monotonic()
    return tally


def reproduce_grid(spec: TaskSpec, options: GridOptions, leaderboard: Path, runs_root: Path) -> int:
    """Re-verify (``reverify_only``, or ``rerun_stale`` without ``no_reverify``), list (``dry_run``) or run the
    task's runs to do, writing records and pages into ``leaderboard`` and run folders under ``runs_root``; the exit
    status (1 when a run failed or gave no finite test metric)."""
    leaderboard.mkdir(parents=True, exist_ok=True)
    if options.reverify_only or (options.rerun_stale and not options.no_reverify and not options.quick):
        restamped = reverify_stale(spec, leaderboard, options.only, options.exclude, options.dry_run)
        if options.reverify_only:
            if restamped:
                print(write_pages(spec, leaderboard))
            return 0
    records = read_records(spec.name, leaderboard)
    todo, done = runs_to_do(spec, records, options)
    total = sum(len(r.runs()) for r in spec.benchmark)
    stale = f", {len(records) - len(done)} of them stale" if options.rerun_stale else ""
    counts = f"{total} in the benchmark, {len(records)} recorded{stale}"
    print(f"zoo reproduce {spec.name}: {len(todo)} runs to do ({counts})")
    if options.dry_run and options.rerun_stale and not options.no_reverify and stale:
        print("  (counted before re-verification: the records of groups whose probes match are re-stamped, not re-run)")
    runs_dir = runs_root / ("quick" if options.quick else "reproduce") / spec.name
    if options.dry_run:
        _list_runs(spec, todo, records, options.quick, leaderboard, runs_dir)
        return 0
    tally = run_grid(spec, todo, options, leaderboard, runs_dir)
    print(write_pages(spec, leaderboard))
    if tally.failed:
        failed = ", ".join(tally.failed)
        print(f"zoo reproduce {spec.name}: {len(tally.failed)} runs failed, no record written: {failed}")
    return 1 if tally.failures or tally.failed else 0
