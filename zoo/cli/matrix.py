"""``zoo reproduce matrix``: the router x task table (issue 26), resumable, one record per tested run.

For every task whose spec names a :class:`~zoo.registry.MatrixRow`, and for its dense twin and every router in
``zoo.moe.ROUTERS``: build the model once with that router (a router that cannot route the task's mixture
refuses with a ConfigError, whose line becomes the cell's reason), tune the cell with ``zoo tune``'s study (the
row's declared space plus the router's knobs, the same number of trials for every cell), then fit and test the
chosen config on the row's benchmark seeds (times its folds). The runs a row's model needs before it can be
built (``StagedMatrixRow.requires``) go first (``zoo.runner.matrix_requires``). Records go to
``leaderboard/results/router_matrix/`` and the page to ``leaderboard/router_matrix.md``.

Two processes can share the table (the same command twice): a lock per run and per study keeps them apart, and a
process that meets a cell the other one is tuning goes on with its next cell and comes back to it at the end.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from zoo.cli.options import add_record_options, add_threads_option, grid_options
from zoo.errors import ConfigError
from zoo.registry import repository_root
from zoo.runner.dirty_tree import refuse_dirty_tree
from zoo.runner.matrix import run_matrix
from zoo.runner.stop_signal import stopping_between_runs
from zoo.runner.threads import set_threads


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="zoo reproduce matrix", description=__doc__)
    p.add_argument("--only", action="append", default=[], help="tasks to run (repeatable; default: all)")
    p.add_argument(
        "--routers",
        default="",
        help="comma-separated routers (default: the built-in ones; name a plugin router to add it)",
    )
    add_record_options(
        p,
        rerun_stale="re-run and replace the records that other code or matrix settings than today's wrote (page mark "
        "°), tuning their cells again unless their study ran today's code and settings; re-probe the cells marked n/a",
        dry_run="list the runs to do and about how long they take",
    )
    add_threads_option(p)
    p.add_argument("--leaderboard", type=Path, default=None, help="leaderboard folder (default: the repo's)")
    p.add_argument("--runs", type=Path, default=None, help="folder for studies, logs and checkpoints (default: runs/)")
    return p


@stopping_between_runs
def matrix_main(argv: list[str]) -> int:
    """``zoo reproduce matrix ...``: parse and run the table (``zoo.runner.matrix.run_matrix``)."""
    from zoo.moe import ROUTERS
    from zoo.moe.routers import BUILTIN_ROUTERS

    ns = _parser().parse_args(argv)
    routers = [r for r in ns.routers.split(",") if r] or sorted(BUILTIN_ROUTERS)  # a plugin router: --routers NAME
    unknown = sorted(set(routers) - set(ROUTERS))
    if unknown:
        raise ConfigError(f"--routers: unknown {', '.join(unknown)}; valid: {', '.join(sorted(ROUTERS))}")
    set_threads(ns.threads)
    if not ns.dry_run and not ns.allow_dirty and not ns.reverify_only:
        refuse_dirty_tree()
    runs = ns.runs or repository_root() / "runs"
    leaderboard = ns.leaderboard or repository_root() / "leaderboard"
    return run_matrix(routers, grid_options(ns), leaderboard, runs)
