"""The fidelity page lists every method of scripts/parity/methods.yaml, every parity record names a method listed
there, and a record outside its tolerance renders as "differs"."""

from __future__ import annotations

import copy

import pytest

from scripts.parity import render
from zoo.registry import discover

EQUAL = {
    "fixture": "toy_fixture",
    "upstream": "yuqinie98/PatchTST",
    "upstream_commit": "0123456789abcdef",
    "comparisons": [
        {
            "methods": ["patchtst"],
            "task": "seer",
            "compared": "forward, loss",
            "items": {
                "outputs": {"max_abs": 1e-7, "max_rel": 2e-7, "tolerance": 1e-5},
                "loss": {"max_abs": 0.0, "max_rel": 0.0, "tolerance": 1e-5},
            },
        }
    ],
    "ours": {"commit": "fedcba9876543210", "dirty": False, "torch": "2.x"},
}


def _rows(page: str, task: str, method: str) -> list[str]:
    section = page.split(f"## {task}\n", 1)[1].split("\n## ", 1)[0]
    return [line for line in section.splitlines() if line.startswith(f"| {method} |")]


def test_every_method_of_methods_yaml_has_a_row_and_entries_are_complete():
    methods = render.load_methods()
    page = render.render(methods, render.load_records())
    keys = [(e["task"], e["method"]) for e in methods]
    assert len(keys) == len(set(keys)), "a (task, method) is listed twice"
    for entry in methods:
        assert {"task", "method", "role", "upstream"} <= entry.keys(), entry
        assert entry["role"] in {"method", "baseline", "ablation", "component"}, entry
        if entry["upstream"] == "no public code":
            assert entry.get("equations"), f"{entry['method']}: no public code must name its equation tests"
        assert _rows(page, entry["task"], entry["method"]), f"no row for {entry['task']}/{entry['method']}"


def test_methods_yaml_covers_every_benchmark_row_of_every_task():
    listed = {(e["task"], e["method"]) for e in render.load_methods()}
    loads = [load for load in discover() if load.name != "toy"]
    assert all(load.spec for load in loads), [load.error for load in loads if not load.spec]
    rows = {(load.name, row.method) for load in loads for row in load.spec.benchmark}
    assert rows - listed == set(), "benchmark rows missing from scripts/parity/methods.yaml"


def test_every_record_names_a_listed_method():
    listed = {(e["task"], e["method"].lower()) for e in render.load_methods()}
    for record in render.load_records():
        assert "comparisons" in record, f"{record['fixture']}: an old record: re-run its test with ZOO_PARITY_RECORD=1"
        for comparison in record["comparisons"]:
            for method in comparison["methods"]:
                where = f"{record['fixture']}: ({comparison['task']}, {method})"
                assert (comparison["task"], method.lower()) in listed, f"{where} is not in methods.yaml"


def test_a_record_within_tolerance_is_equal_and_shows_upstream_commit():
    row = _rows(render.render(render.load_methods(), [EQUAL]), "seer", "patchtst")
    assert len(row) == 1 and "| equal |" in row[0] and "yuqinie98/PatchTST@0123456789" in row[0]


@pytest.mark.parametrize("excess", [1.01, 10.0, float("inf")])
def test_a_record_beyond_its_tolerance_renders_differs(excess):
    record = copy.deepcopy(EQUAL)
    record["comparisons"][0]["items"]["grad/w"] = {"max_abs": 1.0, "max_rel": 1e-5 * excess, "tolerance": 1e-5}
    row = _rows(render.render(render.load_methods(), [record]), "seer", "patchtst")
    assert len(row) == 1 and "**differs**" in row[0] and "(grad/w)" in row[0]


def test_a_pinned_difference_renders_differs_with_its_reason():
    record = copy.deepcopy(EQUAL)
    pinned = {"max_abs": 0.1, "max_rel": 0.1, "tolerance": None, "pinned": "sum, not mean"}
    record["comparisons"][0]["items"]["loss/mean"] = pinned
    row = _rows(render.render(render.load_methods(), [record]), "seer", "patchtst")
    assert "**differs**: sum, not mean" in row[0]


def test_each_comparison_of_a_record_gets_its_own_row_and_verdict():
    record = copy.deepcopy(EQUAL)
    pinned = {"max_abs": 0.1, "max_rel": 0.1, "tolerance": None, "pinned": "sum, not mean"}
    record["comparisons"].append(dict(record["comparisons"][0], compared="reduction", items={"loss/mean": pinned}))
    rows = _rows(render.render(render.load_methods(), [record]), "seer", "patchtst")
    assert len(rows) == 2 and "| equal |" in rows[0] and "**differs**: sum, not mean" in rows[1]
