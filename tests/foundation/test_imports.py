"""`import zoo` and `zoo --help` stay light: no domain library (or torch, for --help) gets imported."""

import subprocess
import sys


def _modules_after(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport sys; print(' '.join(sys.modules))"],
        capture_output=True,
        text=True,
        check=True,
    )
    return set(out.stdout.split())


def test_import_zoo_does_not_import_domain_libraries():
    loaded = _modules_after("import zoo, zoo.moe, zoo.data, zoo.registry, zoo.leaderboard")
    assert not loaded & {"torch_geometric", "gymnasium", "timm", "mmdet", "dm_control"}


def test_help_and_list_do_not_import_torch():
    assert "torch" not in _modules_after("from zoo.cli.main import _run; _run(['--help'])")
    assert "torch" not in _modules_after("from zoo.cli.list_cmd import list_tasks; list_tasks(['--no-routers'])")
