"""Cells whose router the task's model cannot route: the probe that builds the model with the router, and the n/a
marks (``leaderboard/results/router_matrix/not_applicable.jsonl``) it writes and clears."""

from __future__ import annotations

from pathlib import Path

from zoo.errors import ConfigError
from zoo.leaderboard.matrix import clear_not_applicable, write_not_applicable
from zoo.registry import BenchmarkRow, TaskSpec
from zoo.runner.matrix_cells import cell_args, cell_record_path, cell_runs
from zoo.runner.tuning import study_folder

# what every refusal of a router says (zoo.moe.routers.require_router and the tasks' own checks); any other error of
# the probe (a missing dataset or export, a bad setting) is not the router's and must not become an n/a mark
REFUSAL = "cannot route"


def probe(spec: TaskSpec, row: BenchmarkRow, router: str, runs: Path, extra: tuple[str, ...] = ()) -> str | None:
    """None when the task's model builds with ``router``; else the one-line reason it refuses (``extra``: overrides
    after the cell's). Raises the ConfigError of a probe that failed for another reason than the router."""
    from zoo.tuning.study import direction_of

    args = [*cell_args(spec, router, 0, 0 if row.folds else None), *extra]
    try:
        direction_of(args, spec.tune_metric, study_folder(spec, row, router, runs) / "probe")
    except ConfigError as exc:
        line = str(exc).split("\n")[0]
        if REFUSAL not in line:
            why = f"{spec.name} / {router}: the n/a probe failed before the router was tried: {line}"
            raise ConfigError(why) from None
        return line
    return None


def applies_now(spec: TaskSpec, row: BenchmarkRow, router: str, runs: Path, leaderboard: Path) -> bool:
    """Whether the model of today's code builds with ``router``, which older code refused. ``--rerun-stale``
    re-probes n/a cells: an n/a carries no code fingerprint, so only a new probe tells whether today's code still
    refuses. Clears the n/a when it does not; refreshes the reason when it does."""
    reason = probe(spec, row, router, runs)
    if reason is not None:
        write_not_applicable(spec.name, router, reason, leaderboard)
        return False
    clear_not_applicable(spec.name, router, leaderboard)
    print(f"{spec.name} / {router}: was n/a, the model builds with it now", flush=True)
    return True


def remove_cell_records(spec: TaskSpec, label: str, row: BenchmarkRow, leaderboard: Path) -> None:
    """Delete the records of a cell whose model now refuses its router: older code made them (today's cannot), and
    the page would show them in place of the cell's n/a."""
    paths = [cell_record_path(spec, label, seed, fold, leaderboard) for seed, fold in cell_runs(spec, row)]
    removed = [path for path in paths if path.exists()]
    for path in removed:
        path.unlink()
    if removed:
        print(f"  removed its {len(removed)} records of older code: {', '.join(p.name for p in removed)}", flush=True)
