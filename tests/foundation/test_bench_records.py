"""Every `zoo bench` program writes one kind of record (zoo.bench.provenance): the numbers beside the commit, the
sha256 of the bench's source closure, the machine (with its load) and the exact command; a page's speed claim is
judged on such a record and says "no benchmark record" without one (issue 57)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from zoo.bench import provenance
from zoo.bench.provenance import NOT_MEASURING, BenchRun, dirty_files, source_closure
from zoo.cli import main as cli
from zoo.code_closure import closure, closure_hash, installed_roots
from zoo.registry import repository_root


def _git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout.strip()


def test_a_tiny_bench_run_writes_a_record_with_commit_source_hash_machine_and_command(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    argv = ["--lengths", "8", "--batch", "4", "--steps", "1", "--samples", "2", "--sample-steps", "1"]
    assert cli.main(["bench", "timemode-speed", *argv, "--out", "rec.json"]) == 0
    record = json.loads((tmp_path / "rec.json").read_text())
    roots = ["zoo_tasks.timeseries.generation.bench"]
    assert record["bench"] == "timemode-speed"
    assert record["command"] == "zoo bench timemode-speed " + " ".join([*argv, "--out", "rec.json"])
    assert record["commit"] == _git("rev-parse", "HEAD", cwd=repository_root())
    assert record["source_roots"] == roots and record["source_hash"] == provenance.source_hash(roots)
    files = source_closure(roots)
    assert record["dirty_files"] == dirty_files(files.values()) and record["dirty"] == bool(record["dirty_files"])
    machine = record["machine"]
    assert machine["cpu"] and machine["cores"] and len(machine["load_avg_start"]) == 3 and machine["load_avg_end"]
    assert "cpu_isa" in machine and record["versions"]["torch"]
    assert {r["model"] for r in record["rows"]} == {"timemode", "dense"} and record["settings"]["lengths"] == [8]


def test_without_a_flag_a_bench_writes_under_runs_and_a_quick_moe_run_too(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert provenance.output_path("splat").parts[:3] == ("runs", "bench", "splat")
    assert provenance.output_path("splat", leaderboard=True).parent == repository_root() / (
        "leaderboard/results/bench/splat"
    )
    assert provenance.record_folder("moe").name == "moe_layer"  # the folders pages already read stay
    assert provenance.output_path("x", out=Path("a.json"), leaderboard=True) == Path("a.json")


def test_every_registered_bench_writes_through_the_one_writer():
    for name, target in cli.benches().items():
        module = target.partition(":")[0]
        if not module.startswith(("zoo.", "zoo_tasks.")):
            continue  # a test fixture's plugin
        assert provenance.WRITER in closure([module]), f"zoo bench {name} ({module}) does not use zoo.bench.provenance"


def test_the_source_hash_covers_the_measured_code_and_not_the_writer(tmp_path):
    pkg = tmp_path / "benchpkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "measured.py").write_text("def f():\n    return 1\n")
    (pkg / "bench.py").write_text("from benchpkg.measured import f\nfrom zoo.bench.provenance import BenchRun\n")
    roots = {**installed_roots(), "benchpkg": pkg}
    found = closure(["benchpkg.bench"], roots, stop=NOT_MEASURING)
    assert "benchpkg.measured" in found and not any(m.startswith(("zoo.bench", "zoo.leaderboard")) for m in found)
    before = closure_hash(["benchpkg.bench"], roots, stop=NOT_MEASURING)
    (pkg / "measured.py").write_text("def f():\n    return 2\n")
    assert closure_hash(["benchpkg.bench"], roots, stop=NOT_MEASURING) != before


def test_dirty_names_the_bench_files_that_differ_from_head(tmp_path):
    _git("init", "-q", cwd=tmp_path)
    for name in ("bench.py", "other.py"):
        (tmp_path / name).write_text("x = 1\n")
    _git("add", ".", cwd=tmp_path)
    _git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "c", cwd=tmp_path)
    assert dirty_files([tmp_path / "bench.py"], tmp_path) == []
    (tmp_path / "bench.py").write_text("x = 2\n")
    (tmp_path / "other.py").write_text("x = 2\n")  # not in the bench's closure: does not make it dirty
    assert dirty_files([tmp_path / "bench.py"], tmp_path) == ["bench.py"]


def test_numbers_cannot_overwrite_the_provenance():
    with pytest.raises(ValueError, match="commit"):
        BenchRun("x", ["zoo.bench.roofline"], []).record({"commit": "typed by hand"})
