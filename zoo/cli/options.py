"""Options that several ``zoo`` commands' parsers share."""

from __future__ import annotations

import argparse
import dataclasses


def add_threads_option(p: argparse.ArgumentParser) -> None:
    """``--threads N``: torch's CPU threads per run (``zoo.runner.threads.set_threads``)."""
    p.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch CPU threads per run (CPU float sums depend on it: re-run a record with its machine.torch_threads)",
    )


def add_record_options(p: argparse.ArgumentParser, rerun_stale: str, dry_run: str) -> None:
    """What a grid does with the records it has (``zoo reproduce`` and ``zoo reproduce matrix``): ``--rerun-stale``,
    ``--reverify-only``, ``--no-reverify``, ``--dry-run`` and ``--allow-dirty``; ``rerun_stale`` and ``dry_run``:
    those two options' help, which names the command's own rows."""
    p.add_argument("--rerun-stale", action="store_true", help=rerun_stale)
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
    p.add_argument("--dry-run", action="store_true", help=dry_run)
    p.add_argument(
        "--allow-dirty",
        action="store_true",
        help="write records although source files are uncommitted or untracked (the records say so)",
    )


def grid_options(ns: argparse.Namespace):
    """The ``zoo.runner.reproduce.GridOptions`` a parsed command line asks for (the options its parser has; the
    others keep their defaults)."""
    from zoo.runner.reproduce import GridOptions

    names = [field.name for field in dataclasses.fields(GridOptions) if hasattr(ns, field.name)]
    return GridOptions(**{name: getattr(ns, name) for name in names})
