"""Records name the code that made them: the commit is dirty when a source file is modified *or untracked*, and
`zoo reproduce` refuses a dirty tree unless --allow-dirty
(issue 17 item 2)."""

import subprocess

import pytest

from zoo.cli import reproduce
from zoo.errors import ConfigError
from zoo.runinfo import dirty_sources, git_commit
from zoo.runner import dirty_tree


def _git(root, *args):
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


@pytest.fixture()
def checkout(tmp_path):
    (tmp_path / "zoo").mkdir()
    (tmp_path / "zoo" / "core.py").write_text("x = 1\n")
    (tmp_path / ".gitignore").write_text("runs/\n")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "init")
    return tmp_path


def test_untracked_source_files_make_the_commit_dirty(checkout):
    assert dirty_sources(checkout) == [] and not git_commit(checkout).endswith("+dirty")
    # outputs and files outside the sources do not count
    (checkout / "runs").mkdir()
    (checkout / "runs" / "out.json").write_text("{}")
    (checkout / "leaderboard").mkdir()
    (checkout / "leaderboard" / "page.md").write_text("")
    assert not git_commit(checkout).endswith("+dirty")
    (checkout / "tasks" / "graphs").mkdir(parents=True)
    (checkout / "tasks" / "graphs" / "module.py").write_text("new task code\n")
    assert dirty_sources(checkout) == ["tasks/graphs/module.py"]
    assert git_commit(checkout).endswith("+dirty")


def test_reproduce_refuses_a_dirty_tree_unless_allowed(tmp_path, monkeypatch):
    monkeypatch.setattr(dirty_tree, "dirty_sources", lambda root=None: ["tasks/graphs/c2gmoe.py"])
    board = tmp_path / "board"
    with pytest.raises(ConfigError, match=r"tasks/graphs/c2gmoe\.py.*--allow-dirty"):
        reproduce.reproduce_main(["reproduce", "mammoth", "--leaderboard", str(board), "--runs", str(tmp_path)])
    assert not board.exists()
    # a dry run and --allow-dirty go ahead (the dry run only lists)
    assert reproduce.reproduce_main(["reproduce", "mammoth", "--leaderboard", str(board), "--dry-run"]) == 0
