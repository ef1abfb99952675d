"""Tuning glue: the study of a benchmark row (``zoo tune``, a row's ``tune_trials`` in ``zoo reproduce``, every cell
of ``zoo reproduce matrix``), run, resumed or read back under ``runs/tune/<task>/<row>[__<router>]/``.

A study is searched on the validation metric only, with the tuning seed (``TUNE_SEED``, none of the benchmark seeds)
and, for cross-validated rows, fold 0's training folds. A study whose trials ran other code or settings is moved
aside and the search starts afresh (its folder's ``study_code.json``: ``zoo.runner.run_folder.code_and_settings`` of
the trials' arguments).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from zoo.errors import ConfigError
from zoo.leaderboard.record import record_key
from zoo.leaderboard.settings import row_args
from zoo.registry import BenchmarkRow, TaskSpec, repository_root
from zoo.runner.run_folder import code_and_settings, move_aside
from zoo.runner.run_lock import RunLock

TUNE_SEED = 1000  # outside every benchmark's seeds: the selection noise is not the tested runs' own
STUDY_CODE = "study_code.json"


def row_space(spec: TaskSpec, row: BenchmarkRow, router: str | None = None) -> dict:
    """The search space of ``row``: its method's declared space, plus ``router``'s knobs."""
    from zoo.tuning.router_knobs import router_space
    from zoo.tuning.space import check_space

    if row.method not in spec.search_spaces:
        declared = ", ".join(sorted(spec.search_spaces)) or "none"
        raise ConfigError(
            f"task {spec.name} declares no search space for method {row.method!r} (TaskSpec.search_spaces: {declared})"
        )
    space = dict(spec.search_spaces[row.method])
    check_space(space, f"{spec.name} / {row.method}")
    if router:
        space.update(router_space(router, spec.router_arg))
    return space


def study_folder(spec: TaskSpec, row: BenchmarkRow, router: str | None, runs: Path) -> Path:
    """``<runs>/tune/<task>/<method>__<dataset>[__<router>]``: where the row's study lives."""
    name = record_key(row.method, row.dataset, TUNE_SEED, None).rsplit("__seed", 1)[0]
    return runs / "tune" / spec.name / (f"{name}__{router}" if router else name)


def tune_row(
    spec: TaskSpec,
    row: BenchmarkRow,
    trials: int,
    router: str | None = None,
    extra: tuple[str, ...] = (),
    seed: int = TUNE_SEED,
    runs: Path | None = None,
    wait: bool = False,
    unmarked_is_other: bool = False,
):
    """Run (or resume, or read back) the study of ``row`` [with ``router``]; its ``TuneResult``. While another
    process tunes the row, refuse, or with ``wait`` (``zoo reproduce``: two processes sharing a grid) wait for
    its study and read it back. A study that ran other code or settings is moved aside first (``other_study``;
    ``unmarked_is_other``: also one from before studies were marked, when the caller knows its results are stale)."""
    from zoo.tuning.study import run_study

    folder = study_folder(spec, row, router, runs or repository_root() / "runs")
    args = _study_args(spec, row, router, extra, seed)
    made_by = code_and_settings(args)
    best = _finished(folder, lambda: made_by, trials, unmarked_is_other)
    if best is not None:
        return best
    lock = RunLock(folder)
    if not lock.acquire():
        if not wait:
            raise ConfigError(f"{folder}: another process tunes this row ({lock.holder()}); wait for it")
        print(f"  waiting for the study another process runs ({lock.holder()}): {folder}", flush=True)
        lock.acquire(wait=True)
    try:
        if other_study(folder, made_by, unmarked_is_other):
            print(f"  the study in {folder} ran other code or settings; moved to {move_aside(folder)}", flush=True)
        # another process may have finished it meanwhile
        best = _finished(folder, lambda: made_by, trials, unmarked_is_other)
        if best is not None:
            return best
        (folder / STUDY_CODE).write_text(json.dumps(made_by) + "\n")
        return run_study(args, row_space(spec, row, router), folder, trials, seed=0, metric=spec.tune_metric)
    finally:
        lock.release()


def _study_args(spec: TaskSpec, row: BenchmarkRow, router: str | None, extra: tuple[str, ...], seed: int) -> list[str]:
    """The ``zoo fit`` arguments of the study's trials, before each trial's values."""
    args = [*row_args(spec, row, seed, 0 if row.folds else None, quick=False), *extra]
    if router:
        args.append(f"--{spec.router_arg}.router={router}")
    return args


def finished_study(
    spec: TaskSpec,
    row: BenchmarkRow,
    trials: int,
    router: str | None = None,
    extra: tuple[str, ...] = (),
    seed: int = TUNE_SEED,
    runs: Path | None = None,
    unmarked_is_other: bool = False,
):
    """The ``TuneResult`` of the row's study when it has finished at least ``trials`` trials with today's code and
    settings (``other_study``), else None; reads, runs nothing."""
    folder = study_folder(spec, row, router, runs or repository_root() / "runs")

    def made_by() -> dict:
        return code_and_settings(_study_args(spec, row, router, extra, seed))

    return _finished(folder, made_by, trials, unmarked_is_other)


def _finished(folder: Path, made_by: Callable[[], dict], trials: int, unmarked_is_other: bool):
    """The ``TuneResult`` in ``folder`` when its study has at least ``trials`` trials made by ``made_by()``, else
    None. ``made_by`` is called only when the study has enough trials: it builds the code fingerprint (~0.1 s)."""
    from zoo.tuning.study import read_best

    best = read_best(folder)
    if best is None or best.trials < trials:
        return None
    return None if other_study(folder, made_by(), unmarked_is_other) else best


def other_study(folder: Path, made_by: dict, unmarked_is_other: bool = False) -> bool:
    """Whether ``folder`` holds a study whose trials ran other code or settings than ``made_by``
    (``code_and_settings`` of the trials' arguments): resuming it, or reading its choice back, would mix versions.
    A study from before these marks counts as other only with ``unmarked_is_other``."""
    from zoo.tuning.study import BEST_FILE, STUDY_FILE  # imports Lightning: only when a study is looked at

    mark = folder / STUDY_CODE
    if mark.is_file():
        return json.loads(mark.read_text()) != made_by
    return unmarked_is_other and any((folder / name).exists() for name in (STUDY_FILE, BEST_FILE))
