"""One run of a grid, from claiming its folder to writing its record: the steps every run of ``zoo reproduce`` (a
benchmark row's seed and fold) and of ``zoo reproduce matrix`` (a cell's seed and fold) takes, written once.

1. Claim the run folder (``zoo.runner.run_lock``); a folder another process holds is left to it.
2. Skip the run when its record was written meanwhile by another process sharing the grid: any record counts, or
   with ``--rerun-stale`` only a current one (``current``).
3. Before re-running a stale record: set the old run's folder aside (``set_aside_old_run``) and mark which record
   the re-run replaces (``mark_rerun``); a killed run's checkpoint from other code or settings is set aside too
   (``set_aside_other_code``), so a resumed run never mixes two versions.
4. Fit and test (``fit``); a run that raises is reported in one line and the grid goes on (``report_failed_run``).
5. Write the record.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from zoo.leaderboard.record import RunRecord, read_record, write_record
from zoo.runner.failures import report_failed_run
from zoo.runner.metric_change import metric_change
from zoo.runner.run_folder import mark_rerun, set_aside_old_run, set_aside_other_code
from zoo.runner.run_lock import RunLock
from zoo.runner.stop_signal import stop_if_asked

HELD, RECORDED, FAILED, DONE = "held elsewhere", "recorded meanwhile", "failed", "done"


@dataclass(frozen=True)
class RecordedRun:
    """One run to record: its record's ``key`` (in log lines), its ``run_dir`` and ``record_file``, and its ``zoo
    fit`` arguments before tuned values (``args``: what a killed run's checkpoint must have been started with)."""

    key: str
    run_dir: Path
    record_file: Path
    args: Sequence[str]


@dataclass
class Outcome:
    """What became of a run: ``status`` (``HELD``, ``RECORDED``, ``FAILED`` or ``DONE``), the ``record`` written,
    the stale record it replaced (``old``) and the holder of its folder's lock (``holder``, when ``HELD``)."""

    status: str
    record: RunRecord | None = None
    old: RunRecord | None = None
    holder: str = ""

    @property
    def finite(self) -> bool:
        """Whether the written record has test metrics and all of them are finite."""
        metrics = self.record.metrics if self.record is not None else {}
        return bool(metrics) and not any(math.isnan(v) for v in metrics.values())

    def change(self) -> str:
        """How far the re-run's metrics moved from the record it replaced ("" for a first run)."""
        return metric_change(self.old, self.record) if self.old is not None and self.record is not None else ""


def record_run(
    run: RecordedRun,
    fit: Callable[[], RunRecord],
    leaderboard: Path,
    rerun_stale: bool,
    current: Callable[[RunRecord], bool],
    label: str = "",
) -> Outcome:
    """Take ``run``'s steps (the module docstring): ``fit()`` fits, tests and returns the record (not yet written);
    an existing record counts as recorded unless ``rerun_stale`` and not ``current(record)``. ``label``, when
    given, is printed as the run starts."""
    stop_if_asked(run.key)
    lock = RunLock(run.run_dir)
    if not lock.acquire():
        return Outcome(HELD, holder=lock.holder())
    try:
        done = lambda rec: not rerun_stale or current(rec)  # noqa: E731
        return _record_claimed(run, done, fit, leaderboard, label)
    finally:
        lock.release()


def _record_claimed(run: RecordedRun, done, fit, leaderboard: Path, label: str) -> Outcome:
    old = read_record(run.record_file) if run.record_file.exists() else None
    if old is not None and done(old):
        return Outcome(RECORDED, old=old)
    if label:
        print(label + (" (re-run of a stale record)" if old else ""), flush=True)
    if old is not None and (moved := set_aside_old_run(run.run_dir, run.record_file)) is not None:
        print(f"  {run.key}: the old run's folder moved to {moved}", flush=True)
    if (moved := set_aside_other_code(run.run_dir, run.args)) is not None:
        print(f"  {run.key}: its checkpoint came from other code or settings; moved to {moved}", flush=True)
    if old is not None:
        mark_rerun(run.run_dir, run.record_file)
    try:
        record = fit()
    except Exception as exc:  # noqa: BLE001 - any error of one run: reported, the grid goes on
        print(report_failed_run(run.run_dir, run.key, exc), flush=True)
        return Outcome(FAILED, old=old)
    write_record(record, leaderboard)
    return Outcome(DONE, record=record, old=old)
