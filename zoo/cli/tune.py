"""``zoo tune TASK --row METHOD/DATASET``: search the row's hyper-parameters on the validation metric only.

The space is the one the task declares for the row's method (``TaskSpec.search_spaces``), plus the router's own
knobs when ``--router`` names one (``zoo.tuning.router_knobs``). Trials use the tuning seed (``--seed``, default
``TUNE_SEED``, none of the benchmark seeds) and, for cross-validated rows, fold 0's training folds (its
validation split is carved from them); no trial is tested. The study is stored under
``runs/tune/<task>/<row>[__<router>]/`` and resumes when the command is run again with the same code and settings;
a study whose trials ran other code or settings is moved aside and the search starts afresh (its folder's
``study_code.json``: ``zoo.cli.run_folder.code_and_settings`` of the trials' arguments). The result (``best.json``)
holds the chosen values and the overrides that apply them; ``zoo reproduce`` applies them to rows that ask for
tuning, and ``zoo reproduce matrix`` to every cell of the router table.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path

from zoo.cli.reproduce import row_args
from zoo.cli.run_folder import code_and_settings, move_aside
from zoo.cli.run_lock import RunLock
from zoo.cli.stop_signal import stopping_between_runs
from zoo.errors import ConfigError
from zoo.leaderboard.record import record_key
from zoo.registry import BenchmarkRow, TaskSpec, get_task, repository_root

TUNE_SEED = 1000  # outside every benchmark's seeds: the selection noise is not the tested runs' own
STUDY_CODE = "study_code.json"


def find_row(spec: TaskSpec, text: str) -> BenchmarkRow:
    """The benchmark row named ``method/dataset`` (exactly, else the only row containing ``text``)."""
    names = {f"{row.method}/{row.dataset}": row for row in spec.benchmark}
    if text in names:
        return names[text]
    matches = [name for name in names if text in name]
    if len(matches) == 1:
        return names[matches[0]]
    shown = ", ".join(matches[:8] or list(names)[:8])
    raise ConfigError(
        f"--row {text!r} matches {len(matches)} rows of {spec.name}; give one 'method/dataset' of: {shown}"
        + (" ..." if len(matches or names) > 8 else "")
    )


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


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="zoo tune", description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("task")
    p.add_argument("--row", required=True, help="benchmark row 'method/dataset' (or a unique part of it)")
    p.add_argument("--trials", type=int, default=20, help="finished trials (complete or pruned) to run")
    p.add_argument("--router", default=None, help="tune this router (zoo.moe.ROUTERS) and its knobs")
    p.add_argument("--seed", type=int, default=TUNE_SEED, help=f"seed of every trial (default {TUNE_SEED})")
    p.add_argument("--runs", type=Path, default=None, help="folder for the study and its trials (default: runs/)")
    return p


@stopping_between_runs
def tune_main(argv: list[str]) -> int:
    ns, extra = _parser().parse_known_args(argv)
    if ns.trials < 1:
        raise ConfigError(f"--trials {ns.trials}: must be at least 1")
    spec = get_task(ns.task)
    row = find_row(spec, ns.row)
    if ns.router:
        from zoo.moe import ROUTERS

        if ns.router not in ROUTERS:
            raise ConfigError(f"unknown router {ns.router!r}; valid: {', '.join(sorted(ROUTERS))}")
    result = tune_row(spec, row, ns.trials, ns.router, tuple(extra), ns.seed, ns.runs)
    print(
        f"zoo tune {spec.name} {row.method}/{row.dataset}"
        + (f" router={ns.router}" if ns.router else "")
        + f": best {result.metric} {result.value:.4f} over {result.trials} trials ({result.pruned} pruned)"
    )
    for key, value in result.params.items():
        print(f"  {key} = {value}")
    print(f"  study: {result.study}")
    print(f"  zoo fit --config {spec.config_path(row.config)} {' '.join([*row.overrides, *result.overrides])}")
    return 0
