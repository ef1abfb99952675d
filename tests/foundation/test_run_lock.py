"""Several `zoo reproduce` processes can share a grid: a run claimed by one is skipped by the others, and the
claim dies with its holder."""

import subprocess
import sys
import threading

from zoo_testing import run_zoo

from zoo.runner.run_lock import RunLock

HOLD = """
import sys, time
from zoo.runner.run_lock import RunLock
assert RunLock(sys.argv[1]).acquire()
print("held", flush=True)
time.sleep(60)
"""


def _holder(run_dir) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(run_dir)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_lock_excludes_other_processes_until_holder_dies(tmp_path):
    run_dir = tmp_path / "run"
    proc = _holder(run_dir)
    try:
        lock = RunLock(run_dir)
        assert not lock.acquire()
        assert lock.holder() == f"pid {proc.pid}"
    finally:
        proc.kill()
        proc.wait()
    lock = RunLock(run_dir)
    assert lock.acquire(), "a killed holder's lock must not block the run"
    assert not RunLock(run_dir).acquire(), "a second claim in the same process is refused too"
    lock.release()
    assert RunLock(run_dir).acquire()


def test_waiting_acquire_blocks_until_the_holder_dies(tmp_path):
    """``zoo reproduce`` waits for a study another process runs (then reads it back) instead of failing."""
    proc = _holder(tmp_path / "study")
    lock, got = RunLock(tmp_path / "study"), threading.Event()
    waiter = threading.Thread(target=lambda: lock.acquire(wait=True) and got.set())
    try:
        waiter.start()
        assert not got.wait(0.3), "a waiting claim must block while another process holds the lock"
    finally:
        proc.kill()
        proc.wait()
    assert got.wait(10) and lock.held
    waiter.join()
    lock.release()


def test_reproduce_skips_a_run_another_process_holds(zoo_env, tmp_path):
    board, runs = tmp_path / "board", tmp_path / "runs"
    args = ["reproduce", "toy", "--leaderboard", str(board), "--runs", str(runs)]
    ckpt = runs / "reproduce" / "toy" / "moe__digits__seed1" / "checkpoints" / "last.ckpt"
    ckpt.parent.mkdir(parents=True)
    ckpt.touch()
    proc = _holder(runs / "reproduce" / "toy" / "dense__digits__seed0")
    try:
        listing = run_zoo([*args, "--dry-run"], zoo_env, tmp_path).stdout
        assert f"dense / digits seed=0  (running: pid {proc.pid})" in listing
        assert "moe / digits seed=1  (resumes from last.ckpt)" in listing
        assert "moe / digits seed=0\n" in listing
        out = run_zoo([*args, "--only", "dense", "--allow-dirty"], zoo_env, tmp_path)
    finally:
        proc.kill()
        proc.wait()
    assert out.returncode == 0, out.stderr[-3000:]
    assert f"dense__digits__seed0: skipped, another process runs it (pid {proc.pid})" in out.stdout
    assert not list((board / "results" / "toy").glob("*.json"))
