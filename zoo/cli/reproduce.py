"""``zoo reproduce TASK``: run every benchmark row of a task, one record per (seed, fold), resumable.

A row already recorded is skipped (with ``--rerun-stale``, only when its record was written by the current code:
the others are run again and replaced). A row whose run was killed resumes from its ``last.ckpt`` when the code
and settings that started it are unchanged (``zoo.runner.run_folder``), else starts afresh. Several
processes may work on one grid at once: each run is claimed with a lock (``zoo.runner.run_lock``) and skipped by
the others while it is held. ``--quick`` adds each row's ``quick_overrides`` (a smoke run) and writes under
``runs/quick/`` so that the real leaderboard never holds smoke numbers.

``--rerun-stale`` first re-verifies the stale records by behaviour (``zoo.reverify``): a short probe of each group
of records at the code that wrote them and at HEAD; the records whose probes are identical are re-stamped as
current instead of re-run. ``--reverify-only`` does that and nothing else; ``--no-reverify`` skips it.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from zoo.cli.matrix import matrix_main
from zoo.cli.options import add_record_options, add_threads_option, grid_options
from zoo.errors import ConfigError
from zoo.registry import get_task, repository_root
from zoo.runner.dirty_tree import refuse_dirty_tree
from zoo.runner.matrix_page import page
from zoo.runner.pages import write_pages
from zoo.runner.reproduce import reproduce_grid
from zoo.runner.stop_signal import stopping_between_runs
from zoo.runner.task_home import task_home
from zoo.runner.threads import set_threads
from zoo.runner.verify import verify_records


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
    add_record_options(
        p,
        rerun_stale="also run rows whose record was not written by the current code (page mark °) and replace it; "
        "prints each re-run's largest metric change",
        dry_run="list the runs that would execute and exit",
    )
    p.add_argument(
        "--verify",
        action="append",
        default=[],
        metavar="KEY",
        help="re-run this recorded run (its file stem or path; repeatable) with its threads and tuned values, "
        "compare every metric with the record, write no record (zoo.runner.verify)",
    )
    p.add_argument("--tolerance", type=float, default=1e-6, help="with --verify: largest |Δ| that counts as repeating")
    add_threads_option(p)
    p.add_argument(
        "--leaderboard",
        type=Path,
        default=None,
        help="leaderboard folder (default: that of the checkout holding the task: the repo's for its own tasks)",
    )
    p.add_argument("--runs", type=Path, default=None, help="folder for logs and checkpoints (default: runs/)")
    return p


def render_main(argv: list[str]) -> int:
    """``zoo render TASK``: re-render the task's page (``matrix``: the router table) from its records."""
    p = argparse.ArgumentParser(prog="zoo render")
    p.add_argument("task")
    p.add_argument("--leaderboard", type=Path, default=None)
    ns = p.parse_args(argv)
    if ns.task == "matrix":
        print(page(ns.leaderboard or repository_root() / "leaderboard"))
        return 0
    spec = get_task(ns.task)
    print(write_pages(spec, ns.leaderboard or task_home(spec).leaderboard))
    return 0


@stopping_between_runs
def reproduce_main(argv: list[str]) -> int:
    """``zoo reproduce ...`` and ``zoo render ...`` (``argv[0]`` names which): parse and dispatch to ``zoo.runner``."""
    command, argv = argv[0], argv[1:]
    if command == "render":
        return render_main(argv)
    if argv[:1] == ["matrix"]:
        return matrix_main(argv[1:])
    ns = _parser().parse_args(argv)
    spec = get_task(ns.task)
    set_threads(ns.threads)
    home = task_home(spec)
    runs_root = ns.runs or repository_root() / "runs"
    if ns.verify:
        return verify_records(spec, ns.verify, ns.leaderboard or home.leaderboard, runs_root, ns.tolerance)
    if ns.quick and ns.reverify_only:
        raise ConfigError("--reverify-only re-stamps leaderboard records: it has no --quick form")
    if not ns.quick and not ns.dry_run and not ns.allow_dirty and not ns.reverify_only:
        refuse_dirty_tree(home)
    leaderboard = ns.leaderboard or (runs_root / "quick" / "leaderboard" if ns.quick else home.leaderboard)
    return reproduce_grid(spec, grid_options(ns), leaderboard, runs_root)
