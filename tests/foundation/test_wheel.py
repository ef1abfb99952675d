"""The built wheel works on its own: installed non-editable into a temporary folder and run from a scratch
directory holding a ``tasks.py`` (the invoke/Celery convention), every built-in task loads, finds its configs
inside the installed package and trains; nothing is imported from the checkout."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from zoo_testing import REPO, hang_guard, mirror

BUILT_INS = ("c2gmoe", "mammoth", "scalemoe", "seer")
pytestmark = pytest.mark.slow(reason="builds and installs the wheel, then runs zoo from it")

SOURCES = ("pyproject.toml", "README.md", "zoo", "tasks", "configs")  # what the build reads


def _pip(*args: str, cwd: Path) -> None:
    cmd = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input", *args]
    out = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=hang_guard(300))
    assert out.returncode == 0, f"{' '.join(cmd)}\n{out.stdout[-2000:]}\n{out.stderr[-3000:]}"


@pytest.fixture(scope="module")
def wheel_site(tmp_path_factory) -> Path:
    """The project built as a wheel (offline, from a copy of its sources) and installed into a bare folder."""
    base = tmp_path_factory.mktemp("wheel")
    src = base / "src"  # the build writes build/ and *.egg-info next to the sources: keep the checkout clean
    src.mkdir()
    for name in SOURCES:
        if (REPO / name).is_dir():
            shutil.copytree(REPO / name, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(REPO / name, src / name)
    _pip("wheel", "--no-deps", "--no-build-isolation", "--no-index", "-w", str(base / "dist"), str(src), cwd=base)
    (wheel,) = (base / "dist").glob("moe_zoo-*.whl")
    _pip("install", "--no-deps", "--no-index", "--target", str(base / "site"), str(wheel), cwd=base)
    return base / "site"


@pytest.fixture()
def scratch(tmp_path) -> Path:
    """A user's working directory: its ``tasks.py`` must never shadow the installed tasks."""
    (tmp_path / "tasks.py").write_text("raise SystemExit('the scratch tasks.py was imported')\n")
    return tmp_path


def _run(site: Path, cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """``python -S``: no site-packages processing, so the editable install's finder (which maps ``zoo`` to the
    checkout) never loads; dependencies come from the interpreter's site-packages as plain path entries."""
    deps = [p for p in sys.path if p.endswith(("site-packages", "dist-packages")) and not Path(p).is_relative_to(REPO)]
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    full_env.update(env or {})
    full_env.update(PYTHONPATH=os.pathsep.join([str(site), *deps]), OMP_NUM_THREADS="1", ZOO_CACHE_DIR=str(cwd / "c"))
    return subprocess.run(
        [sys.executable, "-S", *args], cwd=cwd, env=full_env, capture_output=True, text=True, timeout=hang_guard(300)
    )


def test_wheel_ships_every_module_config_and_checksum(wheel_site):
    """Catches a package missing from pyproject's explicit ``packages`` list (``zoo list`` alone would not)."""
    modules = {p.relative_to(wheel_site).as_posix() for p in wheel_site.rglob("*.py")}
    for folder, package in (("zoo", "zoo"), ("tasks", "zoo_tasks"), ("configs", "zoo_tasks/configs")):
        expected = {f"{package}/{p.relative_to(REPO / folder).as_posix()}" for p in (REPO / folder).rglob("*.py")}
        missing = sorted(expected - modules)
        assert not missing, f"not in the wheel (list their packages in pyproject.toml): {missing}"
    configs = {p.relative_to(wheel_site / "zoo_tasks" / "configs").as_posix() for p in wheel_site.rglob("*.yaml")}
    assert configs == {p.relative_to(REPO / "configs").as_posix() for p in (REPO / "configs").rglob("*.yaml")}
    sums = {p.relative_to(wheel_site).as_posix() for p in wheel_site.rglob("*.sha256")}
    assert sums == {f"zoo_tasks/{p.relative_to(REPO / 'tasks').as_posix()}" for p in (REPO / "tasks").rglob("*.sha256")}
    assert sums, "no dataset checksums in the wheel"


def test_installed_zoo_lists_every_builtin_from_the_wheel(wheel_site, scratch):
    editable = "any('editable' in name for name in sys.modules)"  # the editable install's finder module
    probe = f"import sys, zoo, zoo_tasks; print(zoo.__file__, zoo_tasks.__file__, {editable})"
    where = _run(wheel_site, scratch, "-c", probe)
    assert where.returncode == 0, where.stderr[-3000:]
    installed = [str(wheel_site / "zoo" / "__init__.py"), str(wheel_site / "zoo_tasks" / "__init__.py")]
    assert where.stdout.split() == [*installed, "False"]  # not the checkout, and no editable finder loaded
    roots = _run(wheel_site, scratch, "-c", "from zoo.registry import *; print(checkout_root(), repository_root())")
    assert roots.stdout.split() == ["None", str(scratch)], roots.stderr[-2000:]  # leaderboard/ goes to the cwd
    out = _run(wheel_site, scratch, "-m", "zoo.cli.main", "list", "--no-routers")
    assert out.returncode == 0, out.stderr[-3000:]
    assert "FAILED TO LOAD" not in out.stdout and "NOT REGISTERED" not in out.stdout, out.stdout
    for name in BUILT_INS:
        assert f"\n{name}  - " in f"\n{out.stdout}", out.stdout
        assert f"configs:  {wheel_site / 'zoo_tasks' / 'configs' / name} (" in out.stdout, out.stdout


def test_installed_zoo_fits_a_builtin_task(wheel_site, scratch):
    """``--task mammoth`` (MUSK1, verified with the wheel's checksums) when the mirror is there, else the digit
    bags shipped inside scikit-learn, through the installed config."""
    found_mirror = mirror()
    if found_mirror is not None:
        task = ["--task", "mammoth"]
    else:
        task = ["--config", str(wheel_site / "zoo_tasks" / "configs" / "mammoth" / "digits.yaml")]
    env = {"ZOO_DATA_MIRROR": str(found_mirror)} if found_mirror else {}
    args = ["-m", "zoo.cli.main", "fit", *task, "--trainer.fast_dev_run", "true", "--trainer.default_root_dir", "run"]
    out = _run(wheel_site, scratch, *args, env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "the scratch tasks.py was imported" not in out.stderr
