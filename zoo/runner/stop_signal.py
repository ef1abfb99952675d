"""SIGTERM stops a long command between two runs, never in the middle of one's record.

``zoo reproduce``, ``zoo reproduce matrix`` and ``zoo tune`` fit many runs in one process. During a fit,
Lightning's own handler turns SIGTERM into an exception at the next training step, which ends the process (the run
resumes from its last checkpoint). Outside a fit -- while a run is tested, its record or the page is written, a
study is read -- Lightning's handler only logs the signal (or, between Lightning stages, the default one kills the
process wherever it is), and the grid went on with its next run: a ``kill`` did not stop it. ``stop_between_runs``
installs a handler that only notes the signal (Lightning calls it too, beside its own), and the loops call
``stop_if_asked`` before each run, which ends the command there with exit code 143 (128 + SIGTERM).
"""

from __future__ import annotations

import functools
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_asked = threading.Event()


def _note(signum, frame) -> None:  # noqa: ARG001 - the signal module's handler signature
    _asked.set()


@contextmanager
def stop_between_runs() -> Iterator[None]:
    """Note SIGTERM instead of dying of it while the block runs (main thread only; elsewhere a no-op)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _asked.clear()
    previous = signal.signal(signal.SIGTERM, _note)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def stopping_between_runs(command):
    """Decorator: run ``command`` inside ``stop_between_runs``."""

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        with stop_between_runs():
            return command(*args, **kwargs)

    return wrapper


def stop_if_asked(what: str) -> None:
    """Exit (code 143) when SIGTERM came since ``stop_between_runs`` began; ``what`` names the run not started."""
    if _asked.is_set():
        print(f"zoo: stopped by SIGTERM before {what}; the same command resumes", file=sys.stderr, flush=True)
        raise SystemExit(128 + signal.SIGTERM)
