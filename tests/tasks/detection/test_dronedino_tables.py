"""The expert-load-per-task table: peaks and the IR-RGB distance from the records' extra."""

from __future__ import annotations

import json
from types import SimpleNamespace

import zoo_tasks.detection.tables as tables
from zoo.leaderboard.draw import draw_tables
from zoo_tasks.detection.spec import DRONEDINO
from zoo_tasks.detection.tables import LOAD_FIGURE, plot_expert_load


def expert_load_tables(records, leaderboard, current):
    """The page's declared sections, drawn by the one renderer from ``leaderboard``."""
    return draw_tables(DRONEDINO, records, leaderboard=leaderboard, current=current)


def _all_current(record):
    return True


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
        tmp_path,
        _all_current,
    )
    assert "| IR+RGB 4:1 | unified_topk | ir | 1 | 2.000 | 0.50 / 0.50 / 0.00 / 0.00 |" in text
    assert "unified_topk: IR-RGB load distance (L1, mean over layers) 0.000" in text
    assert "dronedino: IR-RGB load distance (L1, mean over layers) 2.000" in text
    assert "°" not in text
    no_loads = [SimpleNamespace(dataset="d", method="dino", extra={})]
    assert expert_load_tables(no_loads, tmp_path, _all_current) == ""


def test_expert_load_figure_is_drawn_from_the_records_and_shown_on_the_page(tmp_path):
    records = [
        _record("unified_topk", [0.5, 0.5, 0, 0], [0.5, 0.5, 0, 0]),
        _record("dronedino", [1, 0, 0, 0], [0, 1, 0, 0]),
    ]
    assert "expert_load.png" not in expert_load_tables(records, tmp_path, _all_current)
    figure = tmp_path / "results" / "dronedino" / LOAD_FIGURE
    plot_expert_load(records, figure, current=_all_current)
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "![dynamic-expert load per task](results/dronedino/expert_load.png)" in expert_load_tables(
        records, tmp_path, _all_current
    )


def test_rows_and_panels_of_runs_that_are_not_current_carry_the_pages_mark(tmp_path, monkeypatch):
    records = [
        _record("unified_topk", [0.5, 0.5, 0, 0], [0.5, 0.5, 0, 0]),
        _record("dronedino", [1, 0, 0, 0], [0, 1, 0, 0]),
    ]

    def only_topk_current(record):
        return record.method == "unified_topk"

    text = expert_load_tables(records, tmp_path, only_topk_current)
    assert "| IR+RGB 4:1 | dronedino ° | ir |" in text
    assert "| IR+RGB 4:1 | unified_topk | ir |" in text
    assert "- IR+RGB 4:1, dronedino °: IR-RGB load distance" in text
    assert "- ° rows come from runs" in text

    titles = {}
    monkeypatch.setattr(
        tables, "save_figure", lambda fig, path, dpi: titles.update(t=[a.get_title() for a in fig.axes])
    )
    plot_expert_load(records, tmp_path / LOAD_FIGURE, current=only_topk_current)
    assert titles["t"] == ["dronedino, IR+RGB 4:1 ° (not the current code or settings)", "unified_topk, IR+RGB 4:1"]


def _step_record(leaderboard, name, date, moe, size, steps, losses):
    """A ``zoo bench dronedino-step`` record file with provenance (the numbers are made up: this tests the renderer)."""
    folder = leaderboard / "results" / "bench" / "dronedino-step"
    folder.mkdir(parents=True, exist_ok=True)
    settings = {"moe": moe, "tasks": "ir,rgb", "size": size, "batch": 4, "steps": len(steps), "max_images": None,
                "threads": 1}  # fmt: skip
    record = {"bench": "dronedino-step", "date": date, "commit": "c" * 40, "source_hash": "s" * 64,
              "machine": {"cpu": "cpu"}, "command": f"zoo bench dronedino-step --moe {moe}", "settings": settings,
              "params_m": 23.2, "step_s": steps, "inference_s": 1.5, "losses": [["ir", x] for x in losses]}  # fmt: skip
    (folder / name).write_text(json.dumps(record))


def test_the_step_time_section_is_the_newest_record_of_each_setting_with_its_provenance(tmp_path):
    assert "Step time" not in expert_load_tables([], tmp_path, _all_current)  # no record, no section
    _step_record(tmp_path, "old.json", "2026-01-01T00:00:00Z", "hetero", 320, [9.0, 9.0, 9.0], [20, 19, 18])
    _step_record(tmp_path, "new.json", "2026-02-01T00:00:00Z", "hetero", 320, [6.0, 5.0, 7.0], [18, 17, 16])
    _step_record(tmp_path, "learn.json", "2026-01-15T00:00:00Z", "none", 128, [1.0] * 10, list(range(20, 10, -1)))
    text = expert_load_tables([], tmp_path, _all_current)
    assert "| DroneDINO [1] | ir,rgb | 320 | 4 | all | 1 | 23.2 | 6.00 (6.00, 5.00, 7.00) | 1.50 | 18, 17, 16 |" in text
    assert "| dense DINO [2] | ir,rgb | 128 |" in text and "| 20, 19, 18, 17 → 14, 13, 12, 11 |" in text
    assert "9.00" not in text  # the older record of the same setting is not shown
    assert "1. Record [`results/bench/dronedino-step/new.json`]" in text
