"""Code versions of records: equal task trees at two commits are one version; dirty or missing code is unknown."""

from __future__ import annotations

import subprocess

from zoo.leaderboard.provenance import UNKNOWN, code_version, task_folder
from zoo.leaderboard.record import RunRecord


def _git(repo, *args) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


def _commit(repo, files: dict[str, str], message: str) -> str:
    for name, text in files.items():
        path = repo / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", message)
    return _git(repo, "rev-parse", "HEAD")


def _rec(commit: str, class_path: str = "oldtasks.graphs.module.Net", source_hash: str = "") -> RunRecord:
    return RunRecord(
        task="t", method="m", dataset="d", metrics={}, seed=0, config={"model": {"class_path": class_path}},
        versions={}, wall_time_s=0.0, commit=commit, machine={}, source_hash=source_hash,
    )  # fmt: skip


def test_versions_follow_the_task_and_core_trees(tmp_path):
    _git(tmp_path, "init", "-q")
    first = _commit(tmp_path, {"oldtasks/graphs/a.py": "1", "zoo/moe/x.py": "1"}, "one")
    readme = _commit(tmp_path, {"README.md": "docs only"}, "two")
    changed = _commit(tmp_path, {"oldtasks/graphs/a.py": "2"}, "three")
    core = _commit(tmp_path, {"zoo/moe/x.py": "2"}, "four")
    versions = [code_version(_rec(c), tmp_path) for c in (first, readme, changed, core)]
    assert versions[0] == versions[1]  # a commit that touches neither folder is the same code
    assert len(set(versions[1:])) == 3


def test_an_installed_package_maps_to_the_folder_it_is_installed_from():
    from pathlib import Path

    import zoo_tasks.graphs

    repo = Path(zoo_tasks.graphs.__file__).resolve().parents[2]
    assert task_folder(_rec("c", "zoo_tasks.graphs.module.Net"), repo) == "tasks/graphs"
    assert task_folder(_rec("c", "renamed_long_ago.vision.module.Net"), repo) == "renamed_long_ago/vision"


def test_dirty_missing_and_fingerprinted_records(tmp_path):
    _git(tmp_path, "init", "-q")
    without = _commit(tmp_path, {"zoo/moe/x.py": "1"}, "core only")
    assert code_version(_rec(without), tmp_path).startswith(UNKNOWN)  # the task's code was not committed
    assert code_version(_rec(without + "+dirty"), tmp_path).startswith(UNKNOWN)
    assert code_version(_rec(""), tmp_path).startswith(UNKNOWN)
    assert code_version(_rec(without, source_hash="abc"), tmp_path) == "abc"


def test_the_thread_count_is_part_of_the_version(tmp_path):
    """CPU float reductions change with torch's thread count: a 2-thread re-run of a 1-thread record is another
    version of the cell, even with the same code."""
    one, two = _rec("c", source_hash="abc"), _rec("c", source_hash="abc")
    one.machine, two.machine = {"torch_threads": 1}, {"torch_threads": 2}
    assert code_version(one, tmp_path) == "abc|threads=1" != code_version(two, tmp_path)


def test_the_cpu_model_is_part_of_the_version(tmp_path):
    """The same code and thread count on another CPU model is another version: BLAS kernels differ per CPU."""
    amd, intel, again = (_rec("c", source_hash="abc") for _ in range(3))
    amd.machine = {"torch_threads": 1, "cpu": "AMD EPYC 7B13"}
    intel.machine = again.machine = {"torch_threads": 1, "cpu": "Intel(R) Xeon(R) Processor"}
    assert (
        code_version(intel, tmp_path) == "abc|threads=1|cpu=Intel(R) Xeon(R) Processor" == code_version(again, tmp_path)
    )
    assert code_version(amd, tmp_path) != code_version(intel, tmp_path)


def test_changed_sources_lists_the_run_closure_files_changed_since_the_records_commit():
    from pathlib import Path

    import pytest

    import zoo
    from zoo.leaderboard.provenance import changed_sources

    repo = Path(zoo.__file__).resolve().parents[1]
    try:
        root_commit = _git(repo, "rev-list", "--max-parents=0", "HEAD").splitlines()[-1]
    except (subprocess.CalledProcessError, IndexError):
        pytest.skip("not a git checkout with history")
    if _git(repo, "rev-parse", "--is-shallow-repository") == "true":
        pytest.skip("shallow clone: the first commit is not here")
    changed = changed_sources(_rec(root_commit, "zoo_tasks.graphs.module.NodeClassifier", "x"), repo)
    assert "zoo/cli/fit_test.py" in changed  # the fit driver is in every closure and did not exist at the start
    assert not any(f.startswith("tasks/timeseries/") for f in changed)  # another task's files are not its code
