"""A page's speed or memory claim is a row computed from the newest benchmark record (zoo.bench.claims), shown with
the record's commit and machine; without a record it says "no benchmark record", never a verdict (issue 57)."""

from __future__ import annotations

import json

import pytest

import zoo_tasks.graphs.dynamic.tables as dyg_tables
from zoo.bench.moe import main as moe_main
from zoo.bench.provenance import BenchRun
from zoo.registry import repository_root
from zoo_tasks.graphs.dynamic.bench import main as dygmoce_bench
from zoo_tasks.splatting.tables import rasteriser_lines

DYG = "zoo_tasks.graphs.dynamic.bench"


def _write(leaderboard, folder: str, name: str, roots: list[str], numbers: dict) -> dict:
    """A record as the bench writes it (real provenance), into ``leaderboard/results/<folder>/``."""
    return BenchRun(name, roots, ["--leaderboard"]).write(numbers, leaderboard / "results" / folder / "r.json")


def _dygmoce_numbers(plain: list[float], fast: list[float]) -> dict:
    settings = {"lengths": [64], "batch": 2, "dim": 200, "heads": 2, "curvatures": [0.0], "repeats": len(plain)}
    settings.update(no_backward=False, threads=1, device="cpu")
    runs = [
        {"length": 64, "curvature": 0.0, "repeat": i, "impl": impl, "seconds": s, "peak_mb": 10 * s}
        for i, (p, f) in enumerate(zip(plain, fast))
        for impl, s in (("plain", p), ("fast", f))
    ]
    row = {"length": 64, "curvature": 0.0, "plain_s": plain[0], "fast_s": fast[0], "plain_peak_mb": 10 * plain[0]}
    row.update(fast_peak_mb=10 * fast[0], time_saving=1 - fast[0] / plain[0], memory_saving=1 - fast[0] / plain[0])
    return {"settings": settings, "rows": [row], "measurements": runs}


def test_the_fast_attention_claim_is_judged_on_the_newest_record_and_names_it(tmp_path):
    record = _write(tmp_path, "bench/dygmoce", "dygmoce", [DYG], _dygmoce_numbers([1.0, 1.1, 0.9], [0.1, 0.12, 0.1]))
    page = "\n".join(dyg_tables.fast_attention_lines(tmp_path))
    time_row = next(line for line in page.splitlines() if "of the plain path's time" in line)
    assert "| 3 |" in time_row and time_row.endswith("| better ✓ | met |")
    assert f"commit {record['commit'][:12]}" in page and record["source_hash"][:12] in page
    assert record["machine"]["cpu"] in page and "`zoo bench dygmoce --leaderboard`" in page
    assert "the bench's code is unchanged since" in page


def test_without_a_record_the_claims_say_so_and_judge_nothing(tmp_path):
    page = "\n".join(dyg_tables.fast_attention_lines(tmp_path))
    assert page.count("| no benchmark record |") == 2 and "✓" not in page and "✗" not in page
    # a file typed or written before records carried provenance is no record either
    old = tmp_path / "results" / "bench" / "dygmoce" / "old.json"
    old.parent.mkdir(parents=True)
    old.write_text(json.dumps(_dygmoce_numbers([1.0, 1.0, 1.0], [0.1, 0.1, 0.1]) | {"date": "2026-12-01"}))
    assert "\n".join(dyg_tables.fast_attention_lines(tmp_path)) == page
    assert "no benchmark record" in "\n".join(rasteriser_lines(tmp_path))


@pytest.mark.slow(reason="a real (tiny) DyGMoCE bench run")
def test_a_real_tiny_bench_run_renders_as_a_claim_row(tmp_path, monkeypatch):
    monkeypatch.setattr(dyg_tables, "TASK_SIZE", {"dim": 8, "heads": 2, "no_backward": False})
    monkeypatch.setattr(dyg_tables, "TASK_LENGTH", 8)
    out = tmp_path / "results" / "bench" / "dygmoce" / "tiny.json"
    argv = ["--lengths", "8", "--batch", "2", "--dim", "8", "--curvatures", "0", "--repeats", "1", "--out", str(out)]
    assert dygmoce_bench(argv) == 0
    record = json.loads(out.read_text())
    page = "\n".join(dyg_tables.fast_attention_lines(tmp_path))
    assert f"commit {record['commit'][:12]}" in page and "tiny.json" in page
    assert "| 1 |" in page and "| n too small |" in page and "✓" not in page  # one pair: no verdict


def test_the_rasteriser_claim_names_the_cell_it_measured_and_the_issue_cell_it_did_not(tmp_path):
    runs = [
        {"method": m, "size": 100, "gaussians": 5000, "repeat": i, "seconds": s, "peak_mb": 1.0}
        for i in range(3)
        for m, s in (("tiles", 1.0 + i / 10), ("dense", 60.0 + i))
    ]
    cell = {"size": 100, "gaussians": 5000, "tiles_s": 1.1, "tiles_peak_mb": 1.0, "dense_s": 61.0}
    cell.update(dense_peak_mb=1.0, speedup_vs_dense=61.0 / 1.1)
    numbers = {"mode": "raster", "methods": ["tiles", "dense"], "cells": [cell], "measurements": runs}
    record = _write(tmp_path, "bench/splat", "splat", ["zoo_tasks.splatting.bench"], numbers)
    page = "\n".join(rasteriser_lines(tmp_path))
    rows = [line for line in page.splitlines() if line.startswith("| tile rasteriser")]
    assert "| 100 px, 5000 Gaussians |" in rows[0] and rows[0].endswith("| better ✓ | met |")
    assert "200 px, 20000 Gaussians (the issue's cell)" in rows[1] and "| no benchmark record |" in rows[1]
    assert f"commit {record['commit'][:12]}" in page


def test_the_moe_layer_page_does_not_judge_a_file_without_provenance(tmp_path):
    old = repository_root() / "leaderboard" / "results" / "moe_layer" / "2026-12-02-fourth.json"
    assert "source_hash" not in json.loads(old.read_text())
    assert moe_main(["--render", str(old), "--markdown", str(tmp_path / "page.md")]) == 0
    page = (tmp_path / "page.md").read_text()
    targets = page.split("## Targets", 1)[1].split("## Notes", 1)[0]
    assert "**No benchmark record.**" in page and "| met |" not in targets and "| not met |" not in targets
    assert targets.count("| not judged (no benchmark record) | not yet judged |") == 6  # every target, no verdict
