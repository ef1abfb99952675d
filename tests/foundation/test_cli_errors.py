"""Bad input gives one short message and a non-zero exit code, never a traceback wall."""

import pytest
from zoo_testing import REPO, run_zoo

pytestmark = pytest.mark.slow(reason="each test starts zoo processes (a Lightning import each) for one error line")


def _assert_short_error(out, *needles):
    assert out.returncode != 0
    assert "Traceback" not in out.stderr, out.stderr[-2000:]
    for needle in needles:
        assert needle in out.stderr, out.stderr[-2000:]


def test_unknown_task(zoo_env, tmp_path):
    out = run_zoo(["reproduce", "no_such_task"], zoo_env, tmp_path)
    _assert_short_error(out, "unknown task 'no_such_task'", "toy")
    out = run_zoo(["fit", "--task", "no_such_task"], zoo_env, tmp_path)
    _assert_short_error(out, "unknown task 'no_such_task'")


def test_unknown_router(zoo_env, tmp_path):
    out = run_zoo(["fit", "--task", "toy", "--model.init_args.router", "no_such_router"], zoo_env, tmp_path)
    _assert_short_error(out, "no_such_router", "topk")


def test_wrong_type_in_config(zoo_env, tmp_path):
    out = run_zoo(["fit", "--task", "toy", "--model.init_args.hidden", "thirty-two"], zoo_env, tmp_path)
    _assert_short_error(out, "hidden")


def test_unknown_command_and_benchmark(zoo_env, tmp_path):
    _assert_short_error(run_zoo(["frobnicate"], zoo_env, tmp_path), "unknown command")
    _assert_short_error(run_zoo(["bench", "nope"], zoo_env, tmp_path), "unknown benchmark")


def test_missing_dataset_in_a_real_task(zoo_env, tmp_path, monkeypatch):
    env = {k: v for k, v in zoo_env.items() if k not in ("ZOO_DATA_MIRROR", "ZOO_DATA_DIR")}
    env["ZOO_DATA_DIR"] = str(tmp_path / "empty")
    env["ZOO_DATA_MIRROR"] = ""  # no mirror, not even the one beside the checkout
    # an unroutable proxy makes the download fail fast and the same way on- and offline
    env["https_proxy"] = env["HTTPS_PROXY"] = "http://127.0.0.1:9"
    config = REPO / "configs" / "seer" / "seer.yaml"  # the base SEER config: ETTh1
    out = run_zoo(["fit", "--config", str(config), "--trainer.default_root_dir", "run"], env, tmp_path)
    _assert_short_error(
        out,
        "dataset 'ETT-small' not found",
        str(tmp_path / "empty" / "ETT-small"),
        "download failed",
        "github.com/zhouhaoyi/ETDataset",
    )


def test_config_error_raised_in_a_model_init_is_its_own_line(zoo_env, tmp_path):
    """jsonargparse wraps what a class's __init__ raises ("Does not validate against any of the Union subtypes");
    the user sees the task's ConfigError line, not the wrapper."""
    config = REPO / "configs" / "scalemoe" / "scalemoe_output.yaml"
    args = ["fit", "--config", str(config), "--model.init_args.router", "expert_choice"]
    out = run_zoo([*args, "--trainer.default_root_dir", "run"], zoo_env, tmp_path)
    _assert_short_error(out, "router 'expert_choice' cannot route", "routers that apply")
    assert "Union subtypes" not in out.stderr
    errors = [line for line in out.stderr.splitlines() if line.startswith("zoo: error:")]
    assert len(errors) == 1, out.stderr[-2000:]
