"""Bad input gives one short message and a non-zero exit code, never a traceback wall."""

from conftest import run_zoo


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
