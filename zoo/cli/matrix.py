"""``zoo reproduce matrix``: the router x task table (issue 26), resumable, one record per tested run.

For every task whose spec names a :class:`~zoo.registry.MatrixRow`, and for its dense twin and every router in
``zoo.moe.ROUTERS``: build the model once with that router (a router that cannot route the task's mixture
refuses with a ConfigError, whose line becomes the cell's reason), tune the cell with ``zoo tune``'s study (the
row's declared space plus the router's knobs, the same number of trials for every cell), then fit and test the
chosen config on the row's benchmark seeds (times its folds). The runs a row's model needs before it can be
built (``StagedMatrixRow.requires``) go first (``zoo.cli.matrix_requires``). Records go to
``leaderboard/results/router_matrix/`` and the page to ``leaderboard/router_matrix.md``.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from zoo.cli.fit_test import fit_and_test
from zoo.cli.matrix_requires import run_requirements
from zoo.cli.reproduce import (
    add_threads_option,
    record_of,
    refuse_dirty_tree,
    report_failed_run,
    row_args,
    set_threads,
)
from zoo.cli.run_folder import set_aside_other_code
from zoo.cli.run_lock import RunLock
from zoo.cli.tune import find_row, study_folder, tune_row
from zoo.errors import ConfigError
from zoo.leaderboard.matrix import (
    DENSE,
    MATRIX_TASK,
    read_not_applicable,
    render_matrix,
    write_not_applicable,
)
from zoo.leaderboard.record import read_records, record_key, record_path, write_record
from zoo.registry import TaskSpec, discover, repository_root
from zoo.tuning.matrix_row import cell_overrides, requires


def matrix_specs(only: list[str]) -> list[TaskSpec]:
    specs = [load.spec for load in discover() if load.spec is not None and load.spec.matrix is not None]
    if only:
        specs = [s for s in specs if s.name in only]
        missing = sorted(set(only) - {s.name for s in specs})
        if missing:
            raise ConfigError(f"--only {', '.join(missing)}: no such task with a matrix row")
    return sorted(specs, key=lambda s: s.name)


def _cells(spec: TaskSpec, routers: list[str]):
    matrix = spec.matrix
    yield DENSE, find_row(spec, matrix.dense), None
    moe = find_row(spec, matrix.row)
    for router in routers:
        yield router, moe, router


def recorded_tuning(records, task: str, label: str, trials: int):
    """The ``TuneResult`` a cell's existing records were tested with, when the code that wrote them is the code
    installed now (``written_by_current_code``) and their study had at least ``trials`` trials; else None.

    The study lives under ``runs/`` and is gone on another machine: re-tuning there would spend the cell's trials
    again and could choose other values than its recorded seeds were run with. Reading the choice back keeps every
    seed of a cell on one tuned config."""
    from zoo.leaderboard.provenance import written_by_current_code
    from zoo.tuning.study import recorded_choice

    for rec in records:
        tuned = recorded_choice(rec.extra)
        if rec.dataset != task or rec.method != label or tuned is None or tuned.trials < trials:
            continue
        if written_by_current_code(rec):
            return tuned
    return None


def _probe(spec: TaskSpec, row, router: str, runs: Path) -> str | None:
    """None when the task's model builds with ``router``; else the one-line reason it refuses."""
    from zoo.tuning.study import direction_of

    args = [*row_args(spec, row, 0, 0 if row.folds else None, quick=False), *cell_overrides(spec.matrix, router)]
    args.append(f"--{spec.router_arg}.router={router}")
    try:
        direction_of(args, spec.tune_metric, study_folder(spec, row, router, runs) / "probe")
    except ConfigError as exc:
        return str(exc).split("\n")[0]
    return None


def page(leaderboard: Path) -> Path:
    from zoo.moe import ROUTERS

    metrics, without_row = {}, []
    for load in discover():
        if load.spec is not None and load.spec.matrix is None:
            without_row.append(load.spec.name)
        elif load.spec is not None and load.spec.metrics:
            metric = load.spec.metrics[0]
            metrics[load.spec.name] = (metric, metric in load.spec.higher_is_better)
    notes_file = leaderboard / "notes" / f"{MATRIX_TASK}.md"
    text = render_matrix(
        read_records(MATRIX_TASK, leaderboard),
        metrics,
        sorted(ROUTERS),
        read_not_applicable(leaderboard),
        notes_file.read_text() if notes_file.is_file() else "",
        without_row,
    )
    out = leaderboard / f"{MATRIX_TASK}.md"
    out.write_text(text)
    return out


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="zoo reproduce matrix", description=__doc__)
    p.add_argument("--only", action="append", default=[], help="tasks to run (repeatable; default: all)")
    p.add_argument("--routers", default="", help="comma-separated routers (default: every router)")
    p.add_argument("--dry-run", action="store_true", help="list the cells and runs to do, and exit")
    p.add_argument("--allow-dirty", action="store_true", help="write records from uncommitted sources")
    add_threads_option(p)
    p.add_argument("--leaderboard", type=Path, default=None)
    p.add_argument("--runs", type=Path, default=None)
    return p


def matrix_main(argv: list[str]) -> int:
    from zoo.moe import ROUTERS

    ns = _parser().parse_args(argv)
    routers = [r for r in ns.routers.split(",") if r] or sorted(ROUTERS)
    unknown = sorted(set(routers) - set(ROUTERS))
    if unknown:
        raise ConfigError(f"--routers: unknown {', '.join(unknown)}; valid: {', '.join(sorted(ROUTERS))}")
    set_threads(ns.threads)
    if not ns.dry_run and not ns.allow_dirty:
        refuse_dirty_tree()
    runs = ns.runs or repository_root() / "runs"
    leaderboard = ns.leaderboard or repository_root() / "leaderboard"
    records = read_records(MATRIX_TASK, leaderboard)
    done = {rec.key() for rec in records}
    skipped = read_not_applicable(leaderboard)
    failures = 0
    for spec in matrix_specs(ns.only):
        matrix = spec.matrix
        if requires(matrix):
            failed = run_requirements(spec, runs, ns.dry_run)
            if failed:
                print(f"{spec.name}: {failed} of the runs its row needs failed; its cells are skipped", flush=True)
                failures += failed
                continue
        for label, row, router in _cells(spec, routers):
            todo = [
                (seed, fold)
                for seed in matrix.seeds
                for fold in (range(row.folds) if row.folds else [None])
                if record_key(label, spec.name, seed, fold) not in done
            ]
            if (spec.name, label) in skipped or not todo:
                continue
            print(f"{spec.name} / {label}: {len(todo)} runs to do", flush=True)
            if ns.dry_run:
                continue
            if router is not None:
                reason = _probe(spec, row, router, runs)
                if reason is not None:
                    print(f"  n/a: {reason}", flush=True)
                    write_not_applicable(spec.name, router, reason, leaderboard)
                    continue
            tuned = recorded_tuning(records, spec.name, label, matrix.trials)
            if tuned is not None:
                print(f"  tuning read back from the cell's records: {' '.join(tuned.overrides)}", flush=True)
            else:
                tuned = tune_row(spec, row, matrix.trials, router, cell_overrides(matrix, router), runs=runs, wait=True)
            for seed, fold in todo:
                key = record_key(label, spec.name, seed, fold)
                run_dir = runs / "reproduce" / MATRIX_TASK / f"{spec.name}__{key}"
                lock = RunLock(run_dir)
                if not lock.acquire():
                    print(f"  {key}: another process runs it", flush=True)
                    continue
                try:
                    if record_path(MATRIX_TASK, key, leaderboard).exists():
                        continue
                    args = [*row_args(spec, row, seed, fold, quick=False), *cell_overrides(matrix, router)]
                    if router is not None:
                        args.append(f"--{spec.router_arg}.router={router}")
                    args += tuned.overrides
                    if (moved := set_aside_other_code(run_dir, args)) is not None:
                        print(f"  {key}: its checkpoint came from other code or settings; moved to {moved}", flush=True)
                    try:
                        result = fit_and_test(args, run_dir)
                    except Exception as exc:  # noqa: BLE001 - any error of one run: reported, the grid goes on
                        print(report_failed_run(run_dir, key, exc), flush=True)
                        failures += 1
                        continue
                    extra = {**result.extra, "tuning": tuned.to_dict(), "row": f"{row.method}/{row.dataset}"}
                    settings = " ".join(cell_overrides(matrix, router)) or "its settings"
                    note = f"{row.method}/{row.dataset} with {settings}"
                    record = record_of(result, MATRIX_TASK, label, spec.name, seed, fold, True, note, extra)
                    if not record.metrics or any(math.isnan(v) for v in record.metrics.values()):
                        failures += 1
                    write_record(record, leaderboard)
                    print(f"  {key}: {record.metrics}", flush=True)
                finally:
                    lock.release()
                page(leaderboard)
    if not ns.dry_run:
        print(page(leaderboard))
    return 1 if failures else 0
