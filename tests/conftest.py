"""Shared fixtures: the mirror of real datasets, a third-party plugin installed into a temporary site dir, and one
intra-op thread per test. Helper functions live in ``zoo_testing`` (import them from there, not from conftest)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from zoo_testing import REPO, TOY_PLUGIN, mirror


@pytest.fixture(autouse=True)
def _one_thread():
    """Tiny test tensors run fastest on one intra-op thread: on a shared, busy CPU, OpenMP threads spin-wait on
    each other and small ops get many times slower. Restored after each test."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def data_mirror() -> Path:
    """The read-only mirror of real datasets (``$ZOO_DATA_MIRROR``, else ``shared/datasets`` beside the checkout);
    tests needing it skip, saying why, without it."""
    found = mirror()
    if found is None:
        pytest.skip(
            "no dataset mirror on this machine: set ZOO_DATA_MIRROR to a folder holding the datasets (one folder "
            "per name, as `zoo list` names them), or put shared/datasets beside the checkout"
        )
    return found


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
    found = mirror()
    if found:
        env["ZOO_DATA_MIRROR"] = str(found)
    return env
