"""``zoo reproduce matrix``: the router x task table (issue 26), resumable, one record per tested run.

For every task whose spec names a :class:`~zoo.registry.MatrixRow`, and for its dense twin and every router in
``zoo.moe.ROUTERS``: build the model once with that router (a router that cannot route the task's mixture
refuses with a ConfigError, whose line becomes the cell's reason), tune the cell with ``zoo tune``'s study (the
row's declared space plus the router's knobs, the same number of trials for every cell), then fit and test the
chosen config on the row's benchmark seeds (times its folds). The runs a row's model needs before it can be
built (``StagedMatrixRow.requires``) go first (``zoo.cli.matrix_requires``). Records go to
``leaderboard/results/router_matrix/`` and the page to ``leaderboard/router_matrix.md``.

Two processes can share the table (the same command twice): a lock per run and per study keeps them apart, and a
process that meets a cell the other one is tuning goes on with its next cell and comes back to it at the end.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass
from pathlib import Path

from zoo.cli.fit_test import fit_and_test
from zoo.cli.matrix_cells import CELL_SETTINGS, cell_args, cell_is_current, cell_settings_current
from zoo.cli.matrix_requires import requirements_to_do, run_requirements
from zoo.cli.matrix_time import MatrixTime
from zoo.cli.reproduce import (
    add_threads_option,
    metric_change,
    record_of,
    refuse_dirty_tree,
    report_failed_run,
    set_threads,
)
from zoo.cli.run_folder import mark_rerun, set_aside_old_run, set_aside_other_code
from zoo.cli.run_lock import RunLock
from zoo.cli.stop_signal import stop_if_asked, stopping_between_runs
from zoo.cli.tune import find_row, finished_study, study_folder, tune_row
from zoo.errors import ConfigError
from zoo.leaderboard.matrix import (
    DENSE,
    MATRIX_TASK,
    clear_not_applicable,
    read_not_applicable,
    render_matrix,
    write_not_applicable,
)
from zoo.leaderboard.record import read_record, read_records, record_key, record_path, results_dir, write_record
from zoo.leaderboard.settings import settings_fingerprint
from zoo.registry import BenchmarkRow, TaskSpec, discover, repository_root
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


def recorded_tuning(records, task: str, label: str, trials: int, current=None):
    """The ``TuneResult`` a cell's existing records were tested with, when a record holding it is current
    (``current(record)``; default: written by the code installed now, ``written_by_current_code``) and its study
    had at least ``trials`` trials; else None.

    The study lives under ``runs/`` and is gone on another machine: re-tuning there would spend the cell's trials
    again and could choose other values than its recorded seeds were run with. Reading the choice back keeps every
    seed of a cell on one tuned config."""
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


def _tuned(spec: TaskSpec, label: str, row, router: str | None, runs: Path, records, current) -> bool:
    """Whether the cell needs no more tuning: its current records hold the choice, or its study has finished with
    today's code and settings."""
    trials = spec.matrix.trials
    if recorded_tuning(records, spec.name, label, trials, current) is not None:
        return True
    return finished_study(spec, row, trials, router, cell_overrides(spec.matrix, router), runs=runs) is not None


def _probe(spec: TaskSpec, row, router: str, runs: Path) -> str | None:
    """None when the task's model builds with ``router``; else the one-line reason it refuses."""
    from zoo.tuning.study import direction_of

    args = cell_args(spec, router, 0, 0 if row.folds else None)
    try:
        direction_of(args, spec.tune_metric, study_folder(spec, row, router, runs) / "probe")
    except ConfigError as exc:
        return str(exc).split("\n")[0]
    return None


def page(leaderboard: Path) -> Path:
    """Re-render ``leaderboard/router_matrix.md`` from its records. When the plugin of a task with records does not
    load, the page would show that row with no metric and every cell "not run" (seen while ``pip install -e``
    rewrote the install): it refuses instead and leaves the page as it was (the records are kept; ``zoo render
    matrix`` renders the page once the plugin loads)."""
    from zoo.moe import ROUTERS

    loads, records = discover(), read_records(MATRIX_TASK, leaderboard)
    with_records = {rec.dataset for rec in records}
    broken = [f"{load.name} ({load.error})" for load in loads if load.spec is None and load.name in with_records]
    if broken:
        raise ConfigError(
            f"{leaderboard / MATRIX_TASK}.md not rewritten: task plugins failed to load: {'; '.join(broken)}"
        )
    metrics, without_row, specs = {}, [], {}
    for spec in (load.spec for load in loads if load.spec is not None):
        if spec.matrix is None:
            without_row.append(spec.name)
            continue
        specs[spec.name] = spec
        if spec.metrics:
            metrics[spec.name] = (spec.metrics[0], spec.metrics[0] in spec.higher_is_better)
    notes_file = leaderboard / "notes" / f"{MATRIX_TASK}.md"
    text = render_matrix(
        records,
        metrics,
        sorted(ROUTERS),
        read_not_applicable(leaderboard),
        notes_file.read_text() if notes_file.is_file() else "",
        without_row,
        stale=lambda rec: rec.dataset in specs and not cell_is_current(specs[rec.dataset], rec),
    )
    out = leaderboard / f"{MATRIX_TASK}.md"
    out.write_text(text)
    return out


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="zoo reproduce matrix", description=__doc__)
    p.add_argument("--only", action="append", default=[], help="tasks to run (repeatable; default: all)")
    p.add_argument("--routers", default="", help="comma-separated routers (default: every router)")
    p.add_argument("--dry-run", action="store_true", help="list the runs to do and about how long they take")
    p.add_argument("--allow-dirty", action="store_true", help="write records from uncommitted sources")
    p.add_argument(
        "--rerun-stale",
        action="store_true",
        help="re-run and replace the records that other code or matrix settings than today's wrote (page mark °), "
        "tuning their cells again unless their study ran today's code and settings; re-probe the cells marked n/a",
    )
    p.add_argument(
        "--reverify-only",
        action="store_true",
        help="re-verify the stale records by behaviour (zoo.reverify), re-stamp those whose probes match, run nothing",
    )
    p.add_argument("--no-reverify", action="store_true", help="with --rerun-stale: skip the re-verification")
    add_threads_option(p)
    p.add_argument("--leaderboard", type=Path, default=None, help="leaderboard folder (default: the repo's)")
    p.add_argument("--runs", type=Path, default=None, help="folder for studies, logs and checkpoints (default: runs/)")
    return p


def reverify_cells(only: list[str], leaderboard: Path, dry_run: bool) -> int:
    """Re-verify the stale matrix records by behaviour (``zoo.reverify``) of the tasks ``only`` names (default:
    all), re-stamping those whose probes match; how many were re-stamped. Records of other cell settings than
    today's are left to a re-run."""
    from zoo.reverify.report import reverify
    from zoo.reverify.runner import read_pairs, spec_overrides

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


def _run_one(
    spec: TaskSpec,
    cell: CellToRun,
    run: tuple[int, int | None],
    tuned,
    runs: Path,
    leaderboard: Path,
    rerun_stale: bool,
) -> int:
    """Fit and test one ``run`` (seed, fold) of ``cell`` with its tuned values and write its record (replacing a
    stale one with ``rerun_stale``); 1 when it failed or gave no finite test metric, else 0."""
    label, row, (seed, fold) = cell.label, cell.row, run
    key = record_key(label, spec.name, seed, fold)
    stop_if_asked(f"{spec.name} / {key}")
    run_dir = runs / "reproduce" / MATRIX_TASK / f"{spec.name}__{key}"
    lock = RunLock(run_dir)
    if not lock.acquire():
        print(f"  {key}: another process runs it", flush=True)
        return 0
    try:
        path = record_path(MATRIX_TASK, key, leaderboard)
        old = read_record(path) if path.exists() else None
        if old is not None and (not rerun_stale or cell_is_current(spec, old)):
            return 0  # recorded meanwhile by another process sharing the table
        if old is not None and (moved := set_aside_old_run(run_dir, path)) is not None:
            print(f"  {key}: the stale record's run folder moved to {moved}", flush=True)
        args = cell_args(spec, label, seed, fold)
        settings = settings_fingerprint(args)
        args += tuned.overrides
        if (moved := set_aside_other_code(run_dir, args)) is not None:
            print(f"  {key}: its checkpoint came from other code or settings; moved to {moved}", flush=True)
        if old is not None:
            mark_rerun(run_dir, path)
        try:
            result = fit_and_test(args, run_dir)
        except Exception as exc:  # noqa: BLE001 - any error of one run: reported, the table goes on
            print(report_failed_run(run_dir, key, exc), flush=True)
            return 1
        extra = {**result.extra, "tuning": tuned.to_dict(), "row": f"{row.method}/{row.dataset}"}
        extra[CELL_SETTINGS] = settings
        overrides = " ".join(cell_overrides(spec.matrix, None if label == DENSE else label)) or "its settings"
        note = f"{row.method}/{row.dataset} with {overrides}"
        record = record_of(result, MATRIX_TASK, label, spec.name, seed, fold, True, note, extra)
        write_record(record, leaderboard)
        print(f"  {key}: {record.metrics}" + (f" ({metric_change(old, record)})" if old else ""), flush=True)
        return int(not record.metrics or any(math.isnan(v) for v in record.metrics.values()))
    finally:
        lock.release()


def _cell_runs(spec: TaskSpec, row) -> list[tuple[int, int | None]]:
    """The (seed, fold) of every run of one cell of ``row``."""
    folds = range(row.folds) if row.folds else [None]
    return [(seed, fold) for seed in spec.matrix.seeds for fold in folds]


def _cell_record_path(spec: TaskSpec, label: str, seed: int, fold: int | None, leaderboard: Path) -> Path:
    return record_path(MATRIX_TASK, record_key(label, spec.name, seed, fold), leaderboard)


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


def _run_cell(spec: TaskSpec, cell: CellToRun, ns, leaderboard: Path, runs: Path, records, wait: bool) -> int | None:
    """Probe, tune and run the runs ``cell.todo`` of one cell; the number that failed. None, without ``wait``, when
    the cell's study is being run by another process sharing the table: the caller comes back to it after its other
    cells, so two processes tune two cells at once instead of one waiting for the other."""
    label, row, router = cell.label, cell.row, cell.router
    stop_if_asked(f"{spec.name} / {label}")
    matrix = spec.matrix
    if router is not None and not cell.probed:
        reason = _probe(spec, row, router, runs)
        if reason is not None:
            print(f"  n/a: {reason}", flush=True)
            write_not_applicable(spec.name, router, reason, leaderboard)
            _remove_cell_records(spec, label, row, leaderboard)
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
        failures += _run_one(spec, cell, run, tuned, runs, leaderboard, ns.rerun_stale)
        page(leaderboard)
    return failures


def _applies_now(spec: TaskSpec, row, router: str, runs: Path, leaderboard: Path) -> bool:
    """Whether the model of today's code builds with ``router``, which older code refused. ``--rerun-stale``
    re-probes n/a cells: an n/a carries no code fingerprint, so only a new probe tells whether today's code still
    refuses. Clears the n/a when it does not; refreshes the reason when it does."""
    reason = _probe(spec, row, router, runs)
    if reason is not None:
        write_not_applicable(spec.name, router, reason, leaderboard)
        return False
    clear_not_applicable(spec.name, router, leaderboard)
    print(f"{spec.name} / {router}: was n/a, the model builds with it now", flush=True)
    return True


def _remove_cell_records(spec: TaskSpec, label: str, row, leaderboard: Path) -> None:
    """Delete the records of a cell whose model now refuses its router: older code made them (today's cannot), and
    the page would show them in place of the cell's n/a."""
    paths = [_cell_record_path(spec, label, seed, fold, leaderboard) for seed, fold in _cell_runs(spec, row)]
    removed = [path for path in paths if path.exists()]
    for path in removed:
        path.unlink()
    if removed:
        print(f"  removed its {len(removed)} records of older code: {', '.join(p.name for p in removed)}", flush=True)


@stopping_between_runs
def matrix_main(argv: list[str]) -> int:
    from zoo.moe import ROUTERS

    ns = _parser().parse_args(argv)
    routers = [r for r in ns.routers.split(",") if r] or sorted(ROUTERS)
    unknown = sorted(set(routers) - set(ROUTERS))
    if unknown:
        raise ConfigError(f"--routers: unknown {', '.join(unknown)}; valid: {', '.join(sorted(ROUTERS))}")
    set_threads(ns.threads)
    if not ns.dry_run and not ns.allow_dirty and not ns.reverify_only:
        refuse_dirty_tree()
    runs = ns.runs or repository_root() / "runs"
    leaderboard = ns.leaderboard or repository_root() / "leaderboard"
    if ns.reverify_only or (ns.rerun_stale and not ns.no_reverify):
        restamped = reverify_cells(ns.only, leaderboard, ns.dry_run)
        if ns.reverify_only:
            if restamped:
                print(page(leaderboard))
            return 0
    records = read_records(MATRIX_TASK, leaderboard)
    skipped = read_not_applicable(leaderboard)
    failures, timing = 0, MatrixTime()
    for spec in matrix_specs(ns.only):
        matrix = spec.matrix
        if requires(matrix):
            failed = run_requirements(spec, runs, ns.dry_run)
            if failed:
                print(f"{spec.name}: {failed} of the runs its row needs failed; its cells are skipped", flush=True)
                failures += failed
                continue

        def current(rec, spec=spec) -> bool:
            return cell_is_current(spec, rec)

        if ns.dry_run:
            benchmark_records = read_records(spec.name, leaderboard)
            # a stale record ran other code or settings: its wall time says nothing of the runs to do
            current_records = [rec for rec in records if rec.dataset == spec.name and current(rec)]
            for text, *_ in requirements_to_do(spec, runs):
                timing.add_required(find_row(spec, text), benchmark_records)

        done = {rec.key() for rec in records if rec.dataset == spec.name and (not ns.rerun_stale or current(rec))}
        deferred = []
        for label, row, router in _cells(spec, routers):
            todo = [(s, f) for s, f in _cell_runs(spec, row) if record_key(label, spec.name, s, f) not in done]
            refused = (spec.name, label) in skipped
            probed = (
                refused and ns.rerun_stale and not ns.dry_run and _applies_now(spec, row, router, runs, leaderboard)
            )
            if refused and not probed:
                continue
            if not todo:
                continue
            stale = sum(_cell_record_path(spec, label, s, f, leaderboard).exists() for s, f in todo)
            print(
                f"{spec.name} / {label}: {len(todo)} runs to do" + (f", {stale} of them stale" if stale else ""),
                flush=True,
            )
            if ns.dry_run:
                trials = 0 if _tuned(spec, label, row, router, runs, records, current) else matrix.trials
                timing.add(label, row, len(todo), trials, current_records, benchmark_records)
                continue
            cell = CellToRun(label, row, router, todo, stale, probed)
            result = _run_cell(spec, cell, ns, leaderboard, runs, records, wait=False)
            if result is None:
                deferred.append(cell)
            else:
                failures += result
        for cell in deferred:  # their studies ran in another process meanwhile
            failures += _run_cell(spec, cell, ns, leaderboard, runs, records, wait=True)
    if ns.dry_run:
        if timing.runs or timing.trials or timing.uncounted:
            print(timing.line() + "; cells not yet built with their router count in full (some may turn out n/a)")
    else:
        print(page(leaderboard))
    return 1 if failures else 0
