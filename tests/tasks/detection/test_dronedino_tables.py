"""The expert-load-per-task table: peaks and the IR-RGB distance from the records' extra."""

from __future__ import annotations

from types import SimpleNamespace

from zoo_tasks.detection.tables import expert_load_tables


def _record(method, ir, rgb):
    return SimpleNamespace(
        dataset="IR+RGB 4:1",
        method=method,
        extra={"expert_load_per_task": {"ir": {"encoder.0": ir}, "rgb": {"encoder.0": rgb}}},
    )


def test_expert_load_table_reports_peak_and_task_distance(tmp_path):
    text = expert_load_tables(
        [
            _record("unified_topk", [0.5, 0.5, 0, 0], [0.5, 0.5, 0, 0]),
            _record("dronedino", [0.5, 0.5, 0, 0], [0, 0, 0.5, 0.5]),
        ],
        results=tmp_path,
    )
    assert "| IR+RGB 4:1 | unified_topk | ir | 1 | 2.000 | 0.50 / 0.50 / 0.00 / 0.00 |" in text
    assert "unified_topk: IR-RGB load distance (L1, mean over layers) 0.000" in text
    assert "dronedino: IR-RGB load distance (L1, mean over layers) 2.000" in text
    assert expert_load_tables([SimpleNamespace(dataset="d", method="dino", extra={})], results=tmp_path) == ""
