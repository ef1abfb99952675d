"""`import zoo` and `zoo --help` stay light: no domain library (or torch, for --help) gets imported; every module of
`zoo.moe` stands alone (torch, no Lightning, nothing else of the zoo)."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from zoo_testing import REPO


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


# Imports every module of zoo.moe (its exports load lazily, so `import zoo.moe` alone imports almost nothing) and
# prints where zoo.moe was imported from and every module then loaded.
IMPORT_ALL_OF_ZOO_MOE = """
import importlib, json, pkgutil, sys
import zoo.moe
names = [m.name for m in pkgutil.walk_packages(zoo.moe.__path__, "zoo.moe.")]
for name in names:
    importlib.import_module(name)
print(json.dumps({"file": zoo.moe.__file__, "walked": names, "loaded": sorted(sys.modules)}))
"""


def standalone_problems(pythonpath: Path | None = None) -> tuple[str, list[str]]:
    """Import every module of ``zoo.moe`` in a fresh interpreter (``zoo`` found first on ``pythonpath`` when given);
    returns (where ``zoo.moe`` came from, what it loaded that it must not: Lightning, or a zoo module outside
    ``zoo.moe``)."""
    env = dict(os.environ)
    if pythonpath is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(pythonpath), env.get("PYTHONPATH", "")])
    out = subprocess.run(
        [sys.executable, "-c", IMPORT_ALL_OF_ZOO_MOE], capture_output=True, text=True, check=True, env=env, cwd="/"
    )
    found = json.loads(out.stdout.splitlines()[-1])
    assert len(found["walked"]) >= 10, found["walked"]  # the walk reached the submodules (routers included)
    loaded = found["loaded"]
    bad = [m for m in loaded if "lightning" in m]
    bad += [m for m in loaded if m.startswith("zoo.") and not (m == "zoo.moe" or m.startswith("zoo.moe."))]
    return found["file"], bad


def test_zoo_moe_stands_alone():
    """Every module of ``zoo.moe`` imports torch and nothing else of the zoo (only the ``zoo`` package itself) and no
    Lightning; ``zoo.errors`` re-exports the very exception classes of ``zoo.moe.errors``."""
    where, bad = standalone_problems()
    assert Path(where).resolve().parent == REPO / "zoo" / "moe" and not bad, bad
    import zoo.errors
    import zoo.moe.errors

    assert zoo.errors.ConfigError is zoo.moe.errors.ConfigError and zoo.errors.ZooError is zoo.moe.errors.ZooError
    assert issubclass(zoo.errors.DatasetNotFoundError, zoo.moe.errors.ZooError)


@pytest.mark.slow(reason="a fresh interpreter a case, one importing Lightning")
@pytest.mark.parametrize(
    "injected, reported",
    [("import pytorch_lightning", "pytorch_lightning"), ("import zoo.elsewhere", "zoo.elsewhere")],
)
def test_the_stand_alone_check_catches_an_import_of_lightning_or_of_the_zoo(tmp_path, injected, reported):
    """The check above on a copy of ``zoo/moe`` whose ``stats.py`` (reached only through a lazy export, so ``import
    zoo.moe`` alone never loads it) imports Lightning, or a zoo module outside ``zoo.moe``: it reports it."""
    copy = tmp_path / "zoo"
    shutil.copytree(REPO / "zoo" / "moe", copy / "moe", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "zoo" / "__init__.py", copy / "__init__.py")
    (copy / "elsewhere.py").write_text('"""A zoo module outside zoo.moe."""\n')
    stats = copy / "moe" / "stats.py"
    stats.write_text(f"{stats.read_text()}\n{injected}\n")  # after its `from __future__` import
    where, bad = standalone_problems(pythonpath=tmp_path)
    assert Path(where).resolve().parent == (copy / "moe").resolve()  # the copy was checked, not the installed zoo
    assert reported in bad, bad


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
