"""``run_zoo`` forks its ``zoo`` processes from a server that imported torch and Lightning once
(``tests/zoo_forkserver.py``). The suite's claims rest on those processes being what a fresh ``python -m
zoo.cli.main`` would be: the same exit status and output, the request's environment, working directory and
``PYTHONPATH`` plugins, and a hang guard that kills the process and leaves the server serving."""

from __future__ import annotations

import subprocess

import pytest
from zoo_forkserver import SWITCH as FORK_SERVER_SWITCH
from zoo_forkserver import ForkServer
from zoo_testing import run_zoo

SERVER = ForkServer()


@pytest.mark.slow(reason="starts three fresh interpreters to compare the forked processes with")
def test_a_forked_zoo_process_says_and_exits_what_a_fresh_one_does(zoo_env, tmp_path, monkeypatch):
    (tmp_path / "bad.yaml").write_text("model: [unclosed\n")
    monkeypatch.setenv(FORK_SERVER_SWITCH, "0")  # run_zoo: a fresh interpreter per command
    for args in (["list"], ["fit", "--config", "bad.yaml"], ["fit", "--task", "no_such_task"]):
        forked, fresh = SERVER.run(args, zoo_env, tmp_path, timeout=600), run_zoo(args, zoo_env, tmp_path, timeout=600)
        assert (forked.returncode, forked.stdout, forked.stderr) == (fresh.returncode, fresh.stdout, fresh.stderr)
        assert forked.stdout or forked.stderr


def test_the_request_s_environment_and_folder_are_the_child_s(zoo_env, tmp_path):
    (tmp_path / "here").mkdir()
    bare = {k: v for k, v in zoo_env.items() if k != "PYTHONPATH"}
    with_plugin = run_zoo(["list"], zoo_env, tmp_path / "here")
    without = run_zoo(["list"], bare, tmp_path / "here")
    assert with_plugin.returncode == without.returncode == 0
    assert "zoo_toy" in with_plugin.stdout and "zoo_toy" not in without.stdout  # the plugin came from PYTHONPATH
    missing = run_zoo(["fit", "--config", "nowhere.yaml"], zoo_env, tmp_path / "here")
    assert missing.returncode != 0 and "nowhere.yaml" in missing.stderr


def test_the_hang_guard_kills_the_child_and_the_server_serves_on(zoo_env, tmp_path):
    with pytest.raises(subprocess.TimeoutExpired):
        SERVER.run(["list"], zoo_env, tmp_path, timeout=0.01)
    again = SERVER.run(["list"], zoo_env, tmp_path, timeout=600)
    assert again.returncode == 0 and again.stdout
