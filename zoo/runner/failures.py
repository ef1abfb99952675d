"""The line a grid prints for a run that raised, so that one broken row does not cost the rest of a long grid."""

from __future__ import annotations

import traceback
from pathlib import Path

from zoo.errors import ConfigError


def report_failed_run(run_dir: Path, key: str, exc: Exception) -> str:
    """The line for a run that raised: one broken row must not cost the rest of a long grid, so the grid goes on.
    A ``ConfigError`` is a user-facing message (a row's settings, a checkpoint to delete): shown whole. Anything
    else is a bug: its first line here, the traceback in ``<run_dir>/error.log``."""
    if isinstance(exc, ConfigError):
        return f"  FAILED {key}: ConfigError: {str(exc).strip()}"
    run_dir.mkdir(parents=True, exist_ok=True)
    log = run_dir / "error.log"
    log.write_text("".join(traceback.format_exception(exc)))
    message = (str(exc).strip().splitlines() or [""])[0]
    return f"  FAILED {key}: {type(exc).__name__}: {message} (traceback: {log})"
