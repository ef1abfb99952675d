"""The runs a matrix row's model needs before it can be built (``StagedMatrixRow.requires``), e.g. MoE-GS's stage-1
experts, which its router stage loads frozen for the run's own seed.

Each required benchmark row is fitted and tested with its benchmark settings once per seed the matrix row uses (the
tuning seed and the row's seeds), in ``runs/reproduce/router_matrix/requires/``. Nothing is recorded: the runs only
leave their outputs (exports) in the cache folder (``zoo.data.cache_dir``), where the row's model looks for them. A
run is done when its folder's ``requirement.json`` names the code and settings that would run it now and the cache
folder in use; other code, settings or another cache folder (whose exports are not there) run it again.
"""

from __future__ import annotations

import json
from pathlib import Path

from zoo.cli.fit_test import fit_and_test
from zoo.data import cache_dir
from zoo.leaderboard.matrix import MATRIX_TASK
from zoo.leaderboard.record import record_key
from zoo.leaderboard.settings import row_args
from zoo.registry import TaskSpec
from zoo.runner.failures import report_failed_run
from zoo.runner.rows import find_row
from zoo.runner.run_folder import code_and_settings, set_aside_other_code
from zoo.runner.run_lock import RunLock
from zoo.runner.stop_signal import stop_if_asked
from zoo.runner.tuning import TUNE_SEED
from zoo.tuning.matrix_row import requires

DONE = "requirement.json"


def requirement_runs(spec: TaskSpec, runs: Path) -> list[tuple[str, int, list[str], Path]]:
    """(row text, seed, ``zoo fit`` arguments, run folder) of every required run, in the order they run."""
    matrix, out = spec.matrix, []
    for text in requires(matrix):
        row = find_row(spec, text)
        fold = 0 if row.folds else None
        for seed in dict.fromkeys((TUNE_SEED, *matrix.seeds)):
            key = record_key(row.method, row.dataset, seed, fold)
            folder = runs / "reproduce" / MATRIX_TASK / "requires" / f"{spec.name}__{key}"
            out.append((text, seed, row_args(spec, row, seed, fold, quick=False), folder))
    return out


def _made_by(args: list[str]) -> dict:
    return {"code_and_settings": code_and_settings(args), "cache_dir": str(cache_dir().resolve())}


def is_done(args: list[str], folder: Path) -> bool:
    """Whether ``folder``'s required run is done with the code, settings and cache folder that would run it now."""
    mark = folder / DONE
    if not mark.is_file():
        return False
    done = json.loads(mark.read_text())
    return all(done.get(key) == value for key, value in _made_by(args).items())


def requirements_to_do(spec: TaskSpec, runs: Path) -> list[tuple[str, int, list[str], Path]]:
    """The required runs of ``spec``'s matrix row that are not done (``requirement_runs``' items)."""
    return [run for run in requirement_runs(spec, runs) if not is_done(run[2], run[3])]


def run_requirements(spec: TaskSpec, runs: Path, dry_run: bool = False) -> int:
    """Fit every required run of ``spec``'s matrix row that is not done; the number that failed (its cells cannot
    be built then). With ``dry_run``, list them and run nothing. A run another process holds is left for the end,
    so two processes sharing the table fit two required runs at once instead of one waiting for the other."""
    todo = requirements_to_do(spec, runs)
    if todo:
        print(f"{spec.name} / runs its row needs first: {len(todo)} to do", flush=True)
    if dry_run:
        for text, seed, _, _ in todo:
            print(f"  {text} seed={seed}", flush=True)
        return 0
    failures, held = 0, []
    for run in todo:
        failed = _fit_required(*run, wait=False)
        if failed is None:
            held.append(run)
        else:
            failures += failed
    for run in held:  # fitted by the other process meanwhile, or waited for now
        failures += _fit_required(*run, wait=True)
    return failures


def _fit_required(text: str, seed: int, args: list[str], folder: Path, wait: bool) -> int | None:
    """Fit one required run unless it is done: 1 when it failed, else 0; None, without ``wait``, when another
    process holds it."""
    stop_if_asked(f"{text} seed={seed}")
    lock = RunLock(folder)
    if not lock.acquire():
        if not wait:
            print(f"  {text} seed={seed}: another process fits it; back to it after the others", flush=True)
            return None
        print(f"  {text} seed={seed}: waiting for the process that fits it ({lock.holder()})", flush=True)
        lock.acquire(wait=True)
    try:
        if is_done(args, folder):
            return 0
        set_aside_other_code(folder, args)
        try:
            result = fit_and_test(args, folder)
        except Exception as exc:  # noqa: BLE001 - reported; the row's cells are skipped
            print(report_failed_run(folder, f"{text} seed={seed}", exc), flush=True)
            return 1
        done = {**_made_by(args), "metrics": result.metrics, "wall_time_s": result.wall_time_s}
        (folder / DONE).write_text(json.dumps(done, indent=1) + "\n")
        print(f"  {text} seed={seed}: {result.metrics}", flush=True)
        return 0
    finally:
        lock.release()
