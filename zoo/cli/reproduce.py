"""``zoo reproduce TASK``: run every benchmark row of a task, one record per (seed, fold), resumable.

A row already recorded is skipped (with ``--rerun-stale``, only when its record was written by the current code:
the others are run again and replaced). A row whose run was killed resumes from its ``last.ckpt`` when the code
and settings that started it are unchanged (``zoo.cli.run_folder``), else starts afresh. Several
processes may work on one grid at once: each run is claimed with a lock (``zoo.cli.run_lock``) and skipped by
the others while it is held. ``--quick`` adds each row's ``quick_overrides`` (a smoke run) and writes under
``runs/quick/`` so that the real leaderboard never holds smoke numbers.

``--rerun-stale`` first re-verifies the stale records by behaviour (``zoo.reverify``): a short probe of each group
of records at the code that wrote them and at HEAD; the records whose probes are identical are re-stamped as
current instead of re-run. ``--reverify-only`` does that and nothing else; ``--no-reverify`` skips it.
"""

from __future__ import annotations

import argparse
import math
import time
import traceback
from pathlib import Path

from zoo.cli.fit_test import FitTest, fit_and_test, last_checkpoint
from zoo.cli.run_folder import (
    checkpoint_from_other_code,
    holds_old_run,
    mark_rerun,
    set_aside_old_run,
    set_aside_other_code,
)
from zoo.cli.run_lock import RunLock
from zoo.cli.stop_signal import stop_if_asked, stopping_between_runs
from zoo.code_closure import source_hash
from zoo.errors import ConfigError
from zoo.leaderboard.cpu_identity import record_machine
from zoo.leaderboard.record import (
    RunRecord,
    read_record,
    read_records,
    record_key,
    record_path,
    results_dir,
    write_record,
)
from zoo.leaderboard.render import render_index, render_task
from zoo.leaderboard.settings import SETTINGS_KEY, is_current, row_args, settings_changed, settings_fingerprint
from zoo.leaderboard.versions import run_versions
from zoo.registry import BenchmarkRow, TaskSpec, get_task, repository_root
from zoo.runinfo import dirty_sources, git_commit


def add_threads_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch CPU threads per run (CPU float sums depend on it: re-run a record with its machine.torch_threads)",
    )


def set_threads(threads: int | None) -> None:
    """Pin torch's CPU threads for every run of this process (``--threads``); None leaves torch's default."""
    if threads is None:
        return
    if threads < 1:
        raise ConfigError(f"--threads {threads}: must be at least 1")
    import torch

    torch.set_num_threads(threads)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="zoo reproduce", description=__doc__)
    p.add_argument("task")
    p.add_argument("--quick", action="store_true", help="smoke settings; records go under runs/quick/")
    p.add_argument(
        "--only",
        action="append",
        default=[],
        help="run only rows whose 'method/dataset' contains this text (repeatable)",
    )
    p.add_argument(
        "--exclude",
        action="append",
        default=[],
        help="skip rows whose 'method/dataset' contains this text (repeatable)",
    )
    p.add_argument(
        "--interleave",
        action="store_true",
        help="run (seed, fold) by (seed, fold) across all rows, so every row grows evenly if the run is cut short",
    )
    p.add_argument(
        "--rerun-stale",
        action="store_true",
        help="also run rows whose record was not written by the current code (page mark °) and replace it; "
        "prints each re-run's largest metric change",
    )
    p.add_argument(
        "--reverify-only",
        action="store_true",
        help="re-verify the stale records by behaviour (a short probe at their code and at HEAD, zoo.reverify), "
        "re-stamp those whose probes are identical, and run nothing else",
    )
    p.add_argument(
        "--no-reverify",
        action="store_true",
        help="with --rerun-stale: re-run every stale record without re-verifying it by behaviour first",
    )
    p.add_argument("--dry-run", action="store_true", help="list the runs that would execute and exit")
    p.add_argument(
        "--allow-dirty",
        action="store_true",
        help="write records although source files are uncommitted or untracked (the records say so)",
    )
    p.add_argument(
        "--verify",
        action="append",
        default=[],
        metavar="KEY",
        help="re-run this recorded run (its file stem or path; repeatable) with its threads and tuned values, "
        "compare every metric with the record, write no record (zoo.cli.verify)",
    )
    p.add_argument("--tolerance", type=float, default=1e-6, help="with --verify: largest |Δ| that counts as repeating")
    add_threads_option(p)
    p.add_argument("--leaderboard", type=Path, default=None, help="leaderboard folder (default: the repo's)")
    p.add_argument("--runs", type=Path, default=None, help="folder for logs and checkpoints (default: runs/)")
    return p


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
    ``row_args``); return its record (not yet written)."""
    args, tuning = args if args is not None else row_args(spec, row, seed, fold, quick), None
    settings = settings_fingerprint(args)
    if row.tune_trials and not quick:
        from zoo.cli.tune import tune_row

        tuning = tune_row(spec, row, row.tune_trials, runs=run_dir.parents[2], wait=True)
        args = [*args, *tuning.overrides]
    result = fit_and_test(args, run_dir)
    result.extra[SETTINGS_KEY] = settings
    if tuning is not None:
        result.extra["tuning"] = tuning.to_dict()
    note = ("quick smoke settings; " if quick else "") + row.note
    return record_of(result, spec.name, row.method, row.dataset, seed, fold, row.reduced or quick, note)


def record_of(
    result: FitTest,
    task: str,
    method: str,
    dataset: str,
    seed: int,
    fold: int | None,
    reduced: bool,
    note: str,
    extra: dict | None = None,
) -> RunRecord:
    """The leaderboard record of one finished fit-then-test run, with what makes it repeatable: the resolved
    config, package versions, commit, machine and the source fingerprint of the code the run executed."""
    return RunRecord(
        task=task,
        method=method,
        dataset=dataset,
        metrics=result.metrics,
        seed=seed,
        fold=fold,
        config=result.config,
        versions=run_versions(),
        wall_time_s=result.wall_time_s,
        commit=git_commit(),
        machine=record_machine(),
        reduced=reduced,
        note=note,
        extra=result.extra if extra is None else extra,
        routing=result.routing,
        # equal source hashes: made by the same code (the commit alone can be dirty or not hold it)
        source_hash=source_hash(result.config),
    )


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


def duration(seconds: float) -> str:
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


def _current_record(spec: TaskSpec, path: Path, rerun_stale: bool) -> RunRecord | None:
    """The record at ``path`` when it counts as done: it exists and, with ``rerun_stale``, it is current
    (``is_current``)."""
    if not path.exists():
        return None
    record = read_record(path)
    return record if not rerun_stale or is_current(spec, record) else None


def report_failed_run(run_dir: Path, key: str, exc: Exception) -> str:
    """The line for a run that raised: one broken row must not cost the rest of a long grid, so the grid goes on.
    A ``ConfigError`` is a user-facing message (a row's settings, a checkpoint to delete): shown whole. Anything
    else is a bug: its first line here, the traceback in ``<run_dir>/error.log``."""
    if isinstance(exc, ConfigError):
        return f"  FAILED {key}: ConfigError: {str(exc).strip()}"
    run_dir.mkdir(parents=True, exist_ok=True)
    log = run_dir / "error.log"
    log.write_text("".join(traceback.format_exception(exc)))
    message = (str(exc).strip().splitlines() or [""])[0]
    return f"  FAILED {key}: {type(exc).__name__}: {message} (traceback: {log})"


def largest_change(old: dict[str, float], new: dict[str, float]) -> tuple[str, float] | None:
    """The metric both dicts hold whose value moved most, and ``|Δ|``; None when they share no metric."""
    common = [m for m in new if m in old]
    if not common:
        return None
    worst = max(common, key=lambda m: abs(new[m] - old[m]))
    return worst, abs(new[worst] - old[worst])


def metric_change(old: RunRecord, new: RunRecord) -> str:
    """``max |Δ| = x (metric)`` over the metrics both records hold, for the log of a re-run."""
    change = largest_change(old.metrics, new.metrics)
    if change is None:
        return "no metric in common with the old record"
    return f"max |Δ| vs the old record = {change[1]:.3g} ({change[0]})"


def refuse_dirty_tree() -> None:
    """Records must name the code that made them: refuse while source files differ from HEAD."""
    dirty = dirty_sources()
    if dirty:
        shown = ", ".join(dirty[:5]) + (f" and {len(dirty) - 5} more" if len(dirty) > 5 else "")
        raise ConfigError(
            f"source files differ from the last commit ({shown}): commit them so the records name the code "
            "that made them, or pass --allow-dirty (the records then list those files)"
        )


# Pages are regenerated from all of a task's records (a few seconds for MAMMOTH's 2,250): after a run only when this
# long has passed since the last write, and always at the end; `zoo render TASK` rebuilds them from the records.
PAGE_INTERVAL_S = 120.0


def _selected(row: str, only: list[str], exclude: list[str]) -> bool:
    """Whether ``row`` ("method/dataset") passes ``--only`` and ``--exclude``."""
    return (not only or any(s in row for s in only)) and not any(s in row for s in exclude)


def reverify_stale(spec: TaskSpec, leaderboard: Path, ns: argparse.Namespace) -> int:
    """Re-verify the task's stale records by behaviour (``zoo.reverify``), re-stamping those whose probes match;
    how many were re-stamped. Records of other settings than their row's now are left to a re-run."""
    from zoo.reverify.report import reverify
    from zoo.reverify.runner import read_pairs, spec_overrides

    paths = sorted(results_dir(spec.name, leaderboard).glob("*.json"))
    pairs = [(p, r) for p, r in read_pairs(paths) if _selected(f"{r.method}/{r.dataset}", ns.only, ns.exclude)]
    eligible = lambda rec: not settings_changed(spec, rec)  # noqa: E731
    plan = reverify(spec.name, pairs, repository_root(), eligible, ns.dry_run, overrides=spec_overrides(lambda _: spec))
    return sum(len(d.group.records) for d in plan.restamped())


def _write_pages(spec: TaskSpec, leaderboard: Path) -> Path:
    page = leaderboard / f"{spec.name}.md"
    page.write_text(render_task(spec, read_records(spec.name, leaderboard)))
    (leaderboard / "README.md").write_text(render_index(leaderboard))
    return page


@stopping_between_runs
def reproduce_main(argv: list[str]) -> int:
    command, argv = argv[0], argv[1:]
    if command == "render":
        p = argparse.ArgumentParser(prog="zoo render")
        p.add_argument("task")
        p.add_argument("--leaderboard", type=Path, default=repository_root() / "leaderboard")
        ns = p.parse_args(argv)
        if ns.task == "matrix":
            from zoo.cli.matrix import page

            print(page(ns.leaderboard))
            return 0
        print(_write_pages(get_task(ns.task), ns.leaderboard))
        return 0
    if argv[:1] == ["matrix"]:
        from zoo.cli.matrix import matrix_main

        return matrix_main(argv[1:])
    ns = _parser().parse_args(argv)
    spec = get_task(ns.task)
    set_threads(ns.threads)
    if ns.verify:
        from zoo.cli.verify import verify_main

        board = ns.leaderboard or repository_root() / "leaderboard"
        return verify_main(spec, ns.verify, board, ns.runs or repository_root() / "runs", ns.tolerance)
    if ns.quick and ns.reverify_only:
        raise ConfigError("--reverify-only re-stamps leaderboard records: it has no --quick form")
    if not ns.quick and not ns.dry_run and not ns.allow_dirty and not ns.reverify_only:
        refuse_dirty_tree()
    runs_root = ns.runs or repository_root() / "runs"
    leaderboard = ns.leaderboard or (
        runs_root / "quick" / "leaderboard" if ns.quick else repository_root() / "leaderboard"
    )
    leaderboard.mkdir(parents=True, exist_ok=True)
    if ns.reverify_only or (ns.rerun_stale and not ns.no_reverify and not ns.quick):
        restamped = reverify_stale(spec, leaderboard, ns)
        if ns.reverify_only:
            if restamped:
                print(_write_pages(spec, leaderboard))
            return 0
    records = read_records(spec.name, leaderboard)
    done = {rec.key() for rec in records if not ns.rerun_stale or is_current(spec, rec)}
    todo = []
    for row in spec.benchmark:
        if not _selected(f"{row.method}/{row.dataset}", ns.only, ns.exclude):
            continue
        for seed, fold in row.runs():
            if record_key(row.method, row.dataset, seed, fold) not in done:
                todo.append((row, seed, fold))
    if ns.interleave:
        todo.sort(key=lambda item: (item[1], -1 if item[2] is None else item[2]))  # stable: row order kept
    total = sum(len(r.runs()) for r in spec.benchmark)
    stale = f", {len(records) - len(done)} of them stale" if ns.rerun_stale else ""
    counts = f"{total} in the benchmark, {len(records)} recorded{stale}"
    print(f"zoo reproduce {spec.name}: {len(todo)} runs to do ({counts})")
    if ns.dry_run and ns.rerun_stale and not ns.no_reverify and stale:
        print("  (counted before re-verification: the records of groups whose probes match are re-stamped, not re-run)")
    runs_dir = runs_root / ("quick" if ns.quick else "reproduce") / spec.name
    if ns.dry_run:
        for row, seed, fold in todo:
            record_file = record_path(spec.name, record_key(row.method, row.dataset, seed, fold), leaderboard)
            args = row_args(spec, row, seed, fold, ns.quick)
            print(_dry_run_line(args, row, seed, fold, runs_dir, record_file))
        if todo:
            print(time_to_do(spec, todo, records))
        return 0
    failures, failed = 0, []
    pages_written = time.monotonic()
    for i, (row, seed, fold) in enumerate(todo, 1):
        key = record_key(row.method, row.dataset, seed, fold)
        stop_if_asked(key)
        run_dir = runs_dir / key
        lock = RunLock(run_dir)
        if not lock.acquire():
            print(f"[{i}/{len(todo)}] {key}: skipped, another process runs it ({lock.holder()})", flush=True)
            continue
        try:
            # another process sharing the grid may have finished this run since the list was made
            path = record_path(spec.name, key, leaderboard)
            if _current_record(spec, path, ns.rerun_stale) is not None:
                print(f"[{i}/{len(todo)}] {key}: skipped, recorded meanwhile", flush=True)
                continue
            old = read_record(path) if path.exists() else None
            print(f"[{i}/{len(todo)}] {key}" + (" (re-run of a stale record)" if old else ""), flush=True)
            if old is not None:
                if (moved := set_aside_old_run(run_dir, path)) is not None:
                    print(f"  the old run's folder moved to {moved}", flush=True)
            args = row_args(spec, row, seed, fold, ns.quick)
            if (moved := set_aside_other_code(run_dir, args)) is not None:
                print(f"  its checkpoint came from other code or settings; moved to {moved}", flush=True)
            if old is not None:
                mark_rerun(run_dir, path)
            try:
                record = run_one(spec, row, seed, fold, ns.quick, run_dir, args)
            except Exception as exc:  # noqa: BLE001 - any error of one run: reported, the grid goes on
                print(report_failed_run(run_dir, key, exc), flush=True)
                failed.append(key)
                continue
            if old is not None:
                print(f"  {metric_change(old, record)}", flush=True)
            if any(math.isnan(v) for v in record.metrics.values()) or not record.metrics:
                print(f"  no finite test metrics for {key}: {record.metrics}", flush=True)
                failures += 1
            write_record(record, leaderboard)
        finally:
            lock.release()
        print(f"  {record.metrics}  ({record.wall_time_s:.1f} s) -> {results_dir(spec.name, leaderboard)}", flush=True)
        if time.monotonic() - pages_written >= PAGE_INTERVAL_S:
            _write_pages(spec, leaderboard)
            pages_written = time.monotonic()
    print(_write_pages(spec, leaderboard))
    if failed:
        print(f"zoo reproduce {spec.name}: {len(failed)} runs failed, no record written: {', '.join(failed)}")
    return 1 if failures or failed else 0
