"""One run of a grid from its folder to its record (``zoo.runner.recorded_run``), the steps ``zoo reproduce``'s rows
and the router matrix's cells share: a run another process holds or has recorded is not fitted again, a stale
record's re-run sets the old run aside and replaces the record, and a run that raises writes no record."""

from __future__ import annotations

import json
import os

from zoo.cli.fit_test import last_checkpoint
from zoo.leaderboard.record import RunRecord, read_record, record_path
from zoo.runner.recorded_run import DONE, FAILED, HELD, RECORDED, RecordedRun, record_run
from zoo.runner.run_folder import REPLACES
from zoo.runner.run_lock import RunLock

KEY = "moe__digits__seed0"


def _record(value: float) -> RunRecord:
    return RunRecord("toy", "moe", "digits", {"test/acc": value}, 0, {}, {}, 1.0, "c0ffee", {})


def _run(tmp_path) -> RecordedRun:
    return RecordedRun(KEY, tmp_path / "runs" / KEY, record_path("toy", KEY, tmp_path / "lb"), [])


def _never(record: RunRecord) -> bool:
    """No record is current (each one is stale with --rerun-stale)."""
    return False


class Fit:
    """A stand-in for fit-then-test that counts its calls."""

    def __init__(self, value: float = 0.9, error: Exception | None = None):
        self.calls, self.value, self.error = 0, value, error

    def __call__(self) -> RunRecord:
        self.calls += 1
        if self.error is not None:
            raise self.error
        return _record(self.value)


def test_a_first_run_is_fitted_and_its_record_written(tmp_path):
    run, fit = _run(tmp_path), Fit(0.9)
    outcome = record_run(run, fit, tmp_path / "lb", False, _never)
    assert (outcome.status, fit.calls, outcome.old, outcome.finite) == (DONE, 1, None, True)
    assert read_record(run.record_file).metrics == {"test/acc": 0.9}


def test_a_run_another_process_holds_is_left_to_it_unfitted(tmp_path):
    run, fit = _run(tmp_path), Fit()
    held = RunLock(run.run_dir)
    assert held.acquire()
    try:
        outcome = record_run(run, fit, tmp_path / "lb", False, _never)
    finally:
        held.release()
    assert (outcome.status, fit.calls) == (HELD, 0)
    assert str(os.getpid()) in outcome.holder
    assert not run.record_file.exists()


def test_a_record_written_meanwhile_is_not_run_again_but_a_stale_one_is_replaced(tmp_path):
    run = _run(tmp_path)
    record_run(run, Fit(0.5), tmp_path / "lb", False, _never)
    old_checkpoint = last_checkpoint(run.run_dir)
    old_checkpoint.parent.mkdir(parents=True)
    old_checkpoint.write_text("the old run's weights")
    os.utime(old_checkpoint, (0, 0))  # older than its record: the recorded run's own checkpoint

    fit = Fit(0.8)
    outcome = record_run(run, fit, tmp_path / "lb", False, _never)
    assert (outcome.status, fit.calls) == (RECORDED, 0)

    outcome = record_run(run, fit, tmp_path / "lb", True, _never, label="[1/1] " + KEY)  # --rerun-stale
    assert (outcome.status, fit.calls, outcome.old.metrics) == (DONE, 1, {"test/acc": 0.5})
    assert read_record(run.record_file).metrics == {"test/acc": 0.8}
    assert "max |Δ| vs the old record = 0.3 (test/acc)" == outcome.change()
    moved = run.run_dir.with_name(f"{KEY}.replaced-0")
    assert (moved / "checkpoints" / "last.ckpt").read_text() == "the old run's weights"  # set aside, not resumed
    assert json.loads((run.run_dir / REPLACES).read_text())["record"] == run.record_file.name


def test_a_run_that_raises_writes_no_record_and_says_why_in_one_line(tmp_path, capsys):
    run, fit = _run(tmp_path), Fit(error=RuntimeError("broken on purpose\nsecond line"))
    outcome = record_run(run, fit, tmp_path / "lb", False, _never)
    assert (outcome.status, outcome.record) == (FAILED, None) and not run.record_file.exists()
    line = capsys.readouterr().out.strip()
    assert line == f"FAILED {KEY}: RuntimeError: broken on purpose (traceback: {run.run_dir / 'error.log'})"


def test_a_record_without_finite_metrics_is_written_and_flagged(tmp_path):
    outcome = record_run(_run(tmp_path), Fit(float("nan")), tmp_path / "lb", False, _never)
    assert outcome.status == DONE and not outcome.finite
