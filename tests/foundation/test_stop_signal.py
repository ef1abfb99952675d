"""A SIGTERM that reaches `zoo reproduce` outside a fit (while a run is tested or recorded) stops the grid before its
next run; it used to be logged by Lightning's handler and ignored, so `kill` did not stop a grid."""

import subprocess
import sys

import pytest
from zoo_testing import hang_guard

SCRIPT = """
import os, signal, sys
import zoo.cli.reproduce as reproduce
import zoo.runner.reproduce as grid
import zoo.runner.verify as verify

fit_and_test = grid.fit_and_test

def fit_test_then_sigterm(args, run_dir):
    result = fit_and_test(args, run_dir)
    os.kill(os.getpid(), signal.SIGTERM)  # after the test: the record is still to be written
    return result

grid.fit_and_test = verify.fit_and_test = fit_test_then_sigterm
sys.exit(reproduce.reproduce_main(sys.argv[1:]))
"""


@pytest.mark.slow(reason="a zoo reproduce grid and its --verify, in subprocesses")
def test_sigterm_between_runs_stops_the_grid_after_writing_the_current_record(zoo_env, tmp_path):
    board = tmp_path / "board"
    args = [
        "reproduce",
        "toy",
        "--allow-dirty",
        "--threads",
        "1",
        "--leaderboard",
        str(board),
        "--runs",
        str(tmp_path / "runs"),
    ]
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, *args],
        env=zoo_env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=hang_guard(300),
    )
    assert out.returncode == 143, out.stderr[-3000:]
    assert [p.name for p in (board / "results" / "toy").glob("*.json")] == ["moe__digits__seed0.json"]
    assert "stopped by SIGTERM before moe__digits__seed1; the same command resumes" in out.stderr
    assert "Traceback" not in out.stderr

    key = "moe__digits__seed0"  # --verify re-runs records one after the other: it stops between them too
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, *args, "--verify", key, "--verify", key],
        env=zoo_env, cwd=tmp_path, capture_output=True, text=True, timeout=hang_guard(300),
    )  # fmt: skip
    assert out.returncode == 143, out.stderr[-3000:]
    assert out.stdout.count("max |Δ|") == 1 and f"stopped by SIGTERM before the re-run of {key}" in out.stderr


def test_outside_a_grid_sigterm_keeps_its_default_action(tmp_path):
    script = "import os, signal; from zoo.runner.stop_signal import stop_between_runs\n"
    script += "with stop_between_runs(): pass\nos.kill(os.getpid(), signal.SIGTERM)\nprint('alive')"
    out = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=hang_guard(10)
    )
    assert out.returncode == -15 and "alive" not in out.stdout
