"""A third-party task package, installed with pip, is listed by `zoo list`, trained by `zoo fit`, and a broken
plugin is reported by name without hiding the others."""

from conftest import run_zoo


def test_zoo_list_shows_installed_plugin_and_reports_broken_one(zoo_env, tmp_path):
    out = run_zoo(["list"], zoo_env, tmp_path)
    assert out.returncode == 0, out.stderr
    assert "toy  - 8x8 digits classification" in out.stdout
    assert "toy_broken  [FAILED TO LOAD: zoo_toy.does_not_exist:SPEC]" in out.stdout
    assert "ModuleNotFoundError" in out.stdout
    assert "routers: " in out.stdout and "topk" in out.stdout


def test_zoo_fit_trains_plugin_task_and_saves_run_metadata(zoo_env, tmp_path):
    out = run_zoo(
        ["fit", "--task", "toy", "--trainer.max_epochs", "2", "--trainer.default_root_dir", "run"], zoo_env, tmp_path
    )
    assert out.returncode == 0, out.stderr[-3000:]
    run = tmp_path / "run"
    assert (run / "checkpoints" / "last.ckpt").is_file()
    logs = run / "lightning_logs" / "version_0"
    assert (logs / "config.yaml").is_file()
    meta = (logs / "run_fit.json").read_text()
    for key in ('"seed": 0', '"versions"', '"torch"', '"commit"', '"wall_time_s"', '"val/acc"'):
        assert key in meta
    assert any(p.name.startswith("events.out.tfevents") for p in logs.iterdir()), "TensorBoard log missing"
