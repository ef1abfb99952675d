"""A grid's run folder: a killed re-run resumes, the old run's folder is set aside with its lock kept, and a killed
run's checkpoint is resumed only under the code and settings that started it."""

import json
import os

from zoo.runner.run_folder import RUN_CODE, mark_rerun, set_aside_old_run, set_aside_other_code
from zoo.runner.run_lock import RunLock


def _run_folder(tmp_path, ckpt_mtime: float, record_mtime: float):
    run_dir, record = tmp_path / "runs" / "m__d__seed0", tmp_path / "m__d__seed0.json"
    (run_dir / "checkpoints").mkdir(parents=True)
    (run_dir / "checkpoints" / "last.ckpt").write_bytes(b"weights")
    record.write_text('{"metrics": {"test/acc": 0.5}}')
    os.utime(run_dir / "checkpoints" / "last.ckpt", (ckpt_mtime, ckpt_mtime))
    os.utime(record, (record_mtime, record_mtime))
    return run_dir, record


def test_a_killed_rerun_resumes_even_when_a_checkout_renewed_the_record_files_time(tmp_path):
    run_dir, record = _run_folder(tmp_path, ckpt_mtime=1000, record_mtime=2000)  # the record looks newer
    mark_rerun(run_dir, record)  # written when the re-run started
    assert set_aside_old_run(run_dir, record) is None
    assert (run_dir / "checkpoints" / "last.ckpt").exists()


def test_the_old_runs_folder_is_set_aside_and_the_held_lock_stays(tmp_path):
    run_dir, record = _run_folder(tmp_path, ckpt_mtime=2000, record_mtime=1000)  # the checkpoint looks newer
    mark_rerun(run_dir, record)
    record.write_text('{"metrics": {"test/acc": 0.7}}')  # the re-run finished; that record is stale in turn
    lock = RunLock(run_dir)
    assert lock.acquire()
    try:
        moved = set_aside_old_run(run_dir, record)
        assert moved == run_dir.with_name("m__d__seed0.replaced-0")
        assert (moved / "checkpoints" / "last.ckpt").exists() and not (run_dir / "checkpoints").exists()
        assert not RunLock(run_dir).acquire()  # still held here: no other process can take the row meanwhile
    finally:
        lock.release()


def test_an_unmarked_folder_is_judged_by_file_times(tmp_path):
    old_dir, old_record = _run_folder(tmp_path / "a", ckpt_mtime=1000, record_mtime=2000)
    assert set_aside_old_run(old_dir, old_record) is not None  # the recorded run's own final checkpoint
    killed_dir, killed_record = _run_folder(tmp_path / "b", ckpt_mtime=2000, record_mtime=1000)
    assert set_aside_old_run(killed_dir, killed_record) is None


def test_a_checkpoint_from_other_code_or_settings_is_set_aside(tmp_path):
    config = tmp_path / "config.yaml"
    config.write_text("model:\n  class_path: zoo.cli.fit_test.FitTest\n")
    args = ["--config", str(config), "--seed_everything", "0"]
    run_dir = tmp_path / "runs" / "m__d__seed0"
    (run_dir / "checkpoints").mkdir(parents=True)
    (run_dir / "checkpoints" / "last.ckpt").write_bytes(b"weights")

    assert set_aside_other_code(run_dir, args) is None  # a folder from before the marks: resumed as it is
    assert set_aside_other_code(run_dir, args) is None  # the same code and settings: resumed
    assert (run_dir / "checkpoints" / "last.ckpt").exists()

    changed = [*args, "--model.init_args.lr", "0.1"]
    moved = set_aside_other_code(run_dir, changed)
    assert moved == run_dir.with_name("m__d__seed0.replaced-0")
    assert (moved / "checkpoints" / "last.ckpt").exists() and not (run_dir / "checkpoints").exists()

    (run_dir / "checkpoints").mkdir()
    (run_dir / "checkpoints" / "last.ckpt").write_bytes(b"weights")
    mark = json.loads((run_dir / RUN_CODE).read_text())
    (run_dir / RUN_CODE).write_text(json.dumps({**mark, "source_hash": "written-by-older-code"}))
    assert set_aside_other_code(run_dir, changed) == run_dir.with_name("m__d__seed0.replaced-1")
    assert json.loads((run_dir / RUN_CODE).read_text()) == mark  # the current code and settings, for the new run
