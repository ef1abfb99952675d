"""A third-party task's records go to the leaderboard of the project that holds the task, name that project's commit
and leave the core's leaderboard alone; ``--leaderboard`` still overrides it (``zoo.runner.task_home``)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from zoo_testing import REPO, TOY_PLUGIN, mirror, run_zoo

from zoo.runner import dirty_tree
from zoo.runner.task_home import TaskHome, project_of

CORE_BOARD = REPO / "leaderboard"


def _git(root: Path, *args: str) -> str:
    out = subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True)
    return out.stdout.strip()


@pytest.fixture()
def plugin_checkout(tmp_path) -> tuple[Path, dict[str, str]]:
    """``tests/fixtures/toy_plugin`` as a plugin author's checkout (a git repository of its own, committed) importable
    from its sources, as an editable install leaves it: the checkout on ``PYTHONPATH`` and its distribution's metadata
    (the ``zoo.tasks`` entry point) in a site folder. Returns the checkout and the environment of ``zoo``."""
    project = tmp_path / "toy_project"
    shutil.copytree(TOY_PLUGIN, project, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    (project / ".gitignore").write_text("runs/\n")
    _git(project, "init", "-q")
    _git(project, "add", ".")
    _git(project, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "the toy task")
    dist = tmp_path / "site" / "zoo_toy_plugin-0.1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: zoo-toy-plugin\nVersion: 0.1.0\n")
    (dist / "entry_points.txt").write_text("[zoo.tasks]\ntoy = zoo_toy.spec:SPEC\n")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(dist.parent), str(project), str(REPO), env.get("PYTHONPATH", "")])
    env["ZOO_CACHE_DIR"] = str(tmp_path / "cache")
    env.setdefault("OMP_NUM_THREADS", "1")
    if (found := mirror()) is not None:
        env["ZOO_DATA_MIRROR"] = str(found)
    return project, env


@pytest.mark.slow(reason="zoo reproduce of a plugin task in a subprocess")
def test_a_plugins_records_go_to_its_own_leaderboard_and_name_its_commit(plugin_checkout, tmp_path):
    project, env = plugin_checkout
    elsewhere = tmp_path / "elsewhere"  # the working directory is neither the plugin's checkout nor the core's
    elsewhere.mkdir()
    core_readme = (CORE_BOARD / "README.md").read_bytes()
    # the core's checkout may hold others' uncommitted work: --allow-dirty (the plugin's own checkout is clean)
    args = ["reproduce", "toy", "--only", "dense", "--allow-dirty", "--threads", "1", "--runs", str(tmp_path / "runs")]
    out = run_zoo(args, env, elsewhere)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]

    board = project / "leaderboard"
    record_file = board / "results" / "toy" / "dense__digits__seed0.json"
    assert record_file.is_file() and f"-> {board / 'results' / 'toy'}" in out.stdout
    assert out.stdout.rstrip().endswith(str(board / "toy.md"))
    assert "[toy](toy.md)" in (board / "README.md").read_text()
    record = json.loads(record_file.read_text())
    assert record["commit"] == _git(project, "rev-parse", "HEAD")  # the plugin's commit, clean
    assert record["extra"]["zoo_commit"].partition("+")[0] == _git(REPO, "rev-parse", "HEAD")  # the core's beside it
    # the source hash covers the plugin's files as the core's records cover the core's
    probe = (
        "import json, sys; from zoo.code_closure import run_sources, source_hash\n"
        "config = json.load(open(sys.argv[1]))['config']\n"
        "print(json.dumps([source_hash(config), [str(p) for p in run_sources(config).values()]]))"
    )
    hashed = subprocess.run([sys.executable, "-c", probe, str(record_file)], env=env, capture_output=True, text=True)
    expected, files = json.loads(hashed.stdout)
    assert record["source_hash"] == expected
    assert str(project / "zoo_toy" / "model.py") in files

    assert (CORE_BOARD / "README.md").read_bytes() == core_readme  # the core's leaderboard is untouched
    assert not (CORE_BOARD / "results" / "toy").exists() and not (CORE_BOARD / "toy.md").exists()
    assert not (elsewhere / "leaderboard").exists()

    other = tmp_path / "other_board"  # --leaderboard overrides the plugin's own
    listed = run_zoo(["reproduce", "toy", "--dry-run", "--leaderboard", str(other)], env, elsewhere)
    assert "3 runs to do (3 in the benchmark, 0 recorded)" in listed.stdout
    rendered = run_zoo(["render", "toy"], env, elsewhere)
    assert rendered.stdout.strip() == str(board / "toy.md")


def test_a_dirty_plugin_checkout_is_refused_and_named(plugin_checkout, monkeypatch):
    project, _ = plugin_checkout
    home = TaskHome(project, project / "zoo_toy")
    monkeypatch.setattr(dirty_tree, "dirty_sources", lambda root=None: [])  # the core's checkout: clean
    dirty_tree.refuse_dirty_tree(home)
    (project / "leaderboard").mkdir()
    (project / "leaderboard" / "toy.md").write_text("outputs do not make the plugin dirty\n")
    dirty_tree.refuse_dirty_tree(home)
    (project / "zoo_toy" / "model.py").write_text("# edited\n", encoding="utf-8")
    with pytest.raises(Exception, match=r"zoo_toy/model\.py.*--allow-dirty"):
        dirty_tree.refuse_dirty_tree(home)
    assert home.commit() == _git(project, "rev-parse", "HEAD") + "+dirty"


def test_a_plugin_installed_from_a_wheel_has_no_project_around_it(tmp_path):
    """Walking up from a package in ``site-packages`` stops there, even inside a project's virtual environment."""
    (tmp_path / "pyproject.toml").write_text("")
    package = tmp_path / ".venv" / "lib" / "python3.11" / "site-packages" / "zoo_toy"
    package.mkdir(parents=True)
    assert project_of(package) is None
    assert project_of(tmp_path / "src" / "zoo_toy") == tmp_path
