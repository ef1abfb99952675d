"""Shared fixtures: the mirror of real datasets, a third-party plugin installed into a temporary site dir, and one
intra-op thread per test; in a fast-tier run (``-m "not slow"``), the tests that took long enough to belong in the
slow tier. Helper functions live in ``zoo_testing`` (import them from there, not from conftest)."""

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


# a fast-tier test over this (setup + call, seconds) is named at the end of a `-m "not slow"` run: make it cheaper or
# mark it pytest.mark.slow(reason=...). Measured, so a loaded machine names more; a hint, never a failure.
FAST_TEST_HINT_S = 20.0
_fast_seconds: dict[str, float] = {}


def pytest_runtest_logreport(report):
    if report.when in ("setup", "call") and "slow" not in report.keywords:
        _fast_seconds[report.nodeid] = _fast_seconds.get(report.nodeid, 0.0) + report.duration


def pytest_terminal_summary(terminalreporter, config):
    if "not slow" not in (config.option.markexpr or ""):
        return
    over = sorted(((s, n) for n, s in _fast_seconds.items() if s > FAST_TEST_HINT_S), reverse=True)
    if over:
        title = f"fast-tier tests over {FAST_TEST_HINT_S:.0f} s (make them cheaper or mark them slow, saying why)"
        terminalreporter.section(title)
        for seconds, nodeid in over:
            terminalreporter.write_line(f"{seconds:7.1f}s {nodeid}")
