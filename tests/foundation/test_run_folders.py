"""Each `zoo fit` gets its own run folder and ends with a summary; `--ckpt_path last` resumes the newest run of
the same config and never another config's; a checkpoint of another run is refused in one line; `zoo test`
without a checkpoint refuses instead of scoring an untrained model (issue 17 items 1, 4, 6)."""

import re
import shlex
import subprocess

import pytest
from zoo_testing import REPO, TOY_PLUGIN, run_zoo

TOY_CONFIG = (TOY_PLUGIN / "zoo_toy" / "configs" / "digits.yaml").read_text()


def _fit(config, *args):
    return ["fit", "--config", config, "--trainer.max_epochs", "1", *args]


def _config(tmp_path, name, hidden):
    path = tmp_path / name / "digits.yaml"
    path.parent.mkdir()
    path.write_text(TOY_CONFIG.replace("hidden: 32", f"hidden: {hidden}"))
    return str(path.relative_to(tmp_path))


def _run_folder(stdout):
    return re.search(r"zoo: run folder (\S+)", stdout).group(1)


@pytest.mark.slow(reason="7 zoo processes: two configs fitted, resumed, tested")
def test_runs_get_their_own_folder_and_resume_only_their_own_config(zoo_env, tmp_path):
    a, b = _config(tmp_path, "a", 32), _config(tmp_path, "b", 16)
    first = run_zoo(_fit(a), zoo_env, tmp_path)
    assert first.returncode == 0, first.stderr[-3000:]
    run_a = _run_folder(first.stdout)
    assert re.fullmatch(r"runs/a/digits/\d{8}-\d{6}", run_a), run_a
    assert not (tmp_path / "checkpoints").exists() and not (tmp_path / "lightning_logs").exists()
    # the summary: best validation metric and its checkpoint, how to get test metrics, the run folder (and logs)
    summary = first.stdout[first.stdout.index("zoo: fit done") :].splitlines()
    assert len(summary) <= 6, summary
    assert re.search(rf"best val/acc 0\.\d+ \(epoch 0\): {run_a}/checkpoints/best-0-19\.ckpt", summary[1]), summary
    assert summary[-1].startswith(f"  run folder: {run_a} (logs: {run_a}/lightning_logs/version_0")
    test_line = next(line for line in summary if "zoo test" in line)
    # third-party noise is gone
    for noise in ("litlogger", "LeafSpec", "set_vital"):
        assert noise not in first.stderr

    # the printed test command works (later, `zoo test` without a checkpoint refuses)
    test = run_zoo(shlex.split(test_line.split(": ", 1)[1])[1:], zoo_env, tmp_path)
    assert test.returncode == 0 and "test/acc" in test.stdout, test.stderr[-3000:]

    other = run_zoo(_fit(b), zoo_env, tmp_path)
    assert other.returncode == 0, other.stderr[-3000:]
    assert _run_folder(other.stdout).startswith("runs/b/digits/")

    resumed = run_zoo(["fit", "--config", a, "--trainer.max_epochs", "2", "--ckpt_path", "last"], zoo_env, tmp_path)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert f"zoo: resuming {run_a}/checkpoints/last.ckpt (the newest run of a/digits)" in resumed.stdout
    assert _run_folder(resumed.stdout) == run_a and "zoo: fit done: 2 epochs, 38 steps" in resumed.stdout

    # another config's checkpoint: one line naming what differs, nothing trained
    wrong = run_zoo(_fit(b, "--ckpt_path", f"{run_a}/checkpoints/last.ckpt"), zoo_env, tmp_path)
    assert wrong.returncode == 2 and "Traceback" not in wrong.stderr
    error = wrong.stderr[wrong.stderr.index("zoo: error:") :].strip().splitlines()
    assert len(error) == 1 and "model.init_args.hidden is 32 there, 16 here" in error[0], error

    untrained = run_zoo(["test", "--config", a], zoo_env, tmp_path)
    assert untrained.returncode == 2 and "needs trained weights" in untrained.stderr
    assert "`none` to evaluate the untrained model" in untrained.stderr


@pytest.mark.slow(reason="a zoo process")
def test_a_failed_start_leaves_no_empty_log_folder(zoo_env, tmp_path):
    out = run_zoo(
        ["fit", "--task", "toy", "--model.init_args.nan_at_step", "0", "--trainer.default_root_dir", "run"],
        zoo_env,
        tmp_path,
    )
    assert out.returncode == 2 and "loss is nan at global step 0" in out.stderr
    assert not list((tmp_path / "run" / "lightning_logs").glob("version_*"))


def test_gitignore_covers_run_outputs():
    for path in ("runs/x/y", "checkpoints/last.ckpt", "lightning_logs/version_0/config.yaml"):
        out = subprocess.run(["git", "check-ignore", "-q", path], cwd=REPO)
        assert out.returncode == 0, f"{path} is not git-ignored"


def test_run_keys_never_leave_the_runs_folder():
    from zoo.cli.run_dir import run_key

    assert run_key(["configs/seer/seer.yaml"]) == "seer/seer"
    assert run_key(["../elsewhere.yaml"]) == "elsewhere"
    assert run_key(["./my config.yaml"]) == "my_config"
    assert run_key(["/data/../../x/..yaml"]) == "x/run"
    for key in (run_key(["../a.yaml", "../../b.yaml"]), run_key(["..yaml"])):
        assert ".." not in key.split("/") and not key.startswith("/")
