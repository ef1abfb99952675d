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


def test_zoo_moe_stands_alone():
    """``import zoo.moe`` loads torch and nothing else of the zoo (only the ``zoo`` package itself) and no Lightning;
    ``zoo.errors`` re-exports the very exception classes of ``zoo.moe.errors``."""
    loaded = _modules_after("import zoo.moe")
    zoo_modules = {m for m in loaded if m == "zoo" or m.startswith("zoo.")}
    assert zoo_modules - {"zoo"} and all(m.startswith("zoo.moe") for m in zoo_modules - {"zoo"}), sorted(zoo_modules)
    assert not {m for m in loaded if "lightning" in m}, sorted(m for m in loaded if "lightning" in m)
    import zoo.errors
    import zoo.moe.errors

    assert zoo.errors.ConfigError is zoo.moe.errors.ConfigError and zoo.errors.ZooError is zoo.moe.errors.ZooError
    assert issubclass(zoo.errors.DatasetNotFoundError, zoo.moe.errors.ZooError)


def test_zoo_moe_exports_resolve_lazily_and_errors_stay_torch_free():
    """``zoo.errors`` (imported by the CLI) pulls in no torch; every name in ``zoo.moe.__all__`` resolves, and a
    public name that equals a submodule's (``segment_mm``) is the function even after the submodule is imported."""
    assert "torch" not in _modules_after("import zoo.errors, zoo.moe.errors")
    code = (
        "import zoo.moe.segment_mm, zoo.moe; import zoo.moe as m\n"
        "assert set(m.__all__) == set(m._EXPORTS)\n"
        "assert all(getattr(m, n) is not None for n in m.__all__)\n"
        "assert callable(m.segment_mm) and not isinstance(m.segment_mm, type(m))\n"
        "from zoo.moe import segment_mm, MoE\n"
        "assert segment_mm is m.segment_mm and MoE.__module__ == 'zoo.moe.layer'"
    )
    assert "torch" in _modules_after(code)
