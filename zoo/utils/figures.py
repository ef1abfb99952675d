"""Saving matplotlib figures the same way everywhere: headless (Agg), tight layout, folder created, figure closed."""

from __future__ import annotations

import os


def pyplot():
    """``matplotlib.pyplot`` on the non-interactive Agg backend (runs on machines without a display)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig, path: str | os.PathLike, dpi: int = 100) -> str:
    """Write ``fig`` to ``path`` (format from the suffix) with a tight layout, creating the folder, then close it.

    Returns the path as a string. Closing matters in long runs: pyplot keeps every open figure alive.
    """
    path = os.fspath(path)
    folder = os.path.dirname(path)
    if folder:
        os.makedirs(folder, exist_ok=True)
    try:
        fig.tight_layout()
        fig.savefig(path, dpi=dpi)
    finally:
        pyplot().close(fig)
    return path
