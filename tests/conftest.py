"""Shared fixtures: the mirror of real datasets, and a third-party plugin installed into a temporary site dir."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
TOY_PLUGIN = REPO / "tests" / "fixtures" / "toy_plugin"


def _mirror() -> Path | None:
    """The dataset mirror by the library's own rule (``zoo.data.resolve.data_mirror``), if it exists."""
    from zoo.data.resolve import data_mirror

    mirror = data_mirror()
    return mirror.resolve() if mirror is not None and mirror.is_dir() else None


@pytest.fixture(scope="session")
def data_mirror() -> Path:
    """The read-only mirror of real datasets (``$ZOO_DATA_MIRROR``, else ``shared/datasets`` beside the checkout);
    tests needing it skip, saying why, without it."""
    mirror = _mirror()
    if mirror is None:
        pytest.skip("no dataset mirror: set ZOO_DATA_MIRROR or put shared/datasets beside the checkout")
    return mirror


def need_dataset(name: str, files=None) -> Path:
    """The folder of dataset ``name`` as ``zoo.data.resolve`` finds it (no download); skips the test, naming the
    places tried, when this machine does not have it."""
    from zoo.data.resolve import resolve
    from zoo.errors import DatasetNotFoundError

    try:
        return resolve(name, files=files, download=False)
    except DatasetNotFoundError as exc:
        pytest.skip(f"dataset {name!r} not on this machine: {str(exc).splitlines()[0]}")


@pytest.fixture(scope="session")
def plugin_site(tmp_path_factory) -> Path:
    """``tests/fixtures/toy_plugin`` installed with pip (its own pyproject.toml and entry points) into a
    temporary folder, as a third-party user would install a plugin."""
    site = tmp_path_factory.mktemp("site")
    source = tmp_path_factory.mktemp("src") / "toy_plugin"
    shutil.copytree(TOY_PLUGIN, source)  # pip writes build/ next to the sources: keep the repo clean
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--disable-pip-version-check",
            "--target",
            str(site),
            str(source),
        ],
        check=True,
        capture_output=True,
        text=True,
        cwd=tmp_path_factory.getbasetemp(),
    )
    return site


@pytest.fixture()
def zoo_env(plugin_site, tmp_path) -> dict[str, str]:
    """Environment for running the ``zoo`` command in a subprocess with the toy plugin installed."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(plugin_site), str(REPO), env.get("PYTHONPATH", "")])
    env["ZOO_CACHE_DIR"] = str(tmp_path / "cache")
    env.setdefault("OMP_NUM_THREADS", "1")
    mirror = _mirror()
    if mirror:
        env["ZOO_DATA_MIRROR"] = str(mirror)
    return env


def run_zoo(args: list[str], env: dict[str, str], cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run ``python -m zoo.cli.main ARGS`` (what the ``zoo`` script does) and capture its output."""
    return subprocess.run(
        [sys.executable, "-m", "zoo.cli.main", *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout
    )
