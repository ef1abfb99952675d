"""Options that several ``zoo`` commands' parsers share."""

from __future__ import annotations

import argparse


def add_threads_option(p: argparse.ArgumentParser) -> None:
    """``--threads N``: torch's CPU threads per run (``zoo.runner.threads.set_threads``)."""
    p.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch CPU threads per run (CPU float sums depend on it: re-run a record with its machine.torch_threads)",
    )
