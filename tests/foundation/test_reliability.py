"""A killed run resumes to the same result; a NaN loss stops with the step named and keeps the last good
checkpoint; checkpoints load with weights_only=True."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest
import torch
from zoo_testing import run_zoo


def _final_run_info(run_dir):
    runs = sorted((run_dir / "lightning_logs").glob("version_*/run_fit.json"))
    return json.loads(runs[-1].read_text())


@pytest.mark.slow(reason="fits the toy task three times in zoo processes, one killed")
def test_sigkill_then_resume_matches_uninterrupted_run(zoo_env, tmp_path):
    args = ["fit", "--task", "toy", "--trainer.max_epochs", "6", "--model.init_args.epoch_delay_s", "0.4"]
    full = run_zoo([*args, "--trainer.default_root_dir", "full"], zoo_env, tmp_path)
    assert full.returncode == 0, full.stderr[-3000:]

    cmd = [sys.executable, "-m", "zoo.cli.main", *args, "--trainer.default_root_dir", "killed"]
    proc = subprocess.Popen(cmd, env=zoo_env, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    last = tmp_path / "killed" / "checkpoints" / "last.ckpt"
    deadline = time.time() + 240
    while time.time() < deadline and proc.poll() is None:
        if last.exists() and torch.load(last, weights_only=True)["epoch"] >= 1:
            break
        time.sleep(0.1)
    assert proc.poll() is None, "run finished before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    killed_at = torch.load(last, weights_only=True)["epoch"]
    assert killed_at < 5

    resumed = run_zoo([*args, "--trainer.default_root_dir", "killed", "--ckpt_path", "last"], zoo_env, tmp_path)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    full_info, resumed_info = _final_run_info(tmp_path / "full"), _final_run_info(tmp_path / "killed")
    expected, got = full_info["metrics"], resumed_info["metrics"]
    for key in ("val/acc", "val/loss", "train/loss"):
        assert abs(expected[key] - got[key]) < 1e-5, (key, expected[key], got[key], killed_at)
    # the wall time covers the epochs run before the kill too (each epoch sleeps 0.4 s)
    assert full_info["wall_time_before_resume_s"] == 0
    assert resumed_info["wall_time_before_resume_s"] >= 0.4 * (killed_at + 1)
    assert resumed_info["wall_time_s"] > resumed_info["wall_time_before_resume_s"]


@pytest.mark.slow(reason="fits in a zoo process")
def test_nan_loss_stops_with_step_and_keeps_last_good_checkpoint(zoo_env, tmp_path):
    # 1200 train samples / batch 64 = 19 steps per epoch; step 30 is inside epoch 1
    out = run_zoo(
        [
            "fit",
            "--task",
            "toy",
            "--trainer.max_epochs",
            "3",
            "--model.init_args.nan_at_step",
            "30",
            "--trainer.default_root_dir",
            "run",
        ],
        zoo_env,
        tmp_path,
    )
    assert out.returncode == 2
    assert "Traceback" not in out.stderr
    assert "loss is nan at global step 30" in out.stderr
    ckpt = torch.load(tmp_path / "run" / "checkpoints" / "last.ckpt", weights_only=True)
    assert ckpt["epoch"] == 0 and ckpt["global_step"] == 19
    assert all(torch.isfinite(v).all() for v in ckpt["state_dict"].values())


@pytest.mark.slow(reason="fits and tests in zoo processes")
def test_checkpoints_load_weights_only_and_cli_defaults_to_it(zoo_env, tmp_path):
    out = run_zoo(
        ["fit", "--task", "toy", "--trainer.max_epochs", "1", "--trainer.default_root_dir", "run"], zoo_env, tmp_path
    )
    assert out.returncode == 0, out.stderr[-3000:]
    ckpt = tmp_path / "run" / "checkpoints" / "last.ckpt"
    torch.load(ckpt, weights_only=True)  # raises if anything but tensors and primitives were pickled
    out = run_zoo(
        ["test", "--task", "toy", "--ckpt_path", str(ckpt), "--trainer.default_root_dir", "run"], zoo_env, tmp_path
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert "test/acc" in out.stdout
