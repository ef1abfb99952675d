"""Example figures: the ones records name are copied from run folders into ``plots/``, and pages embed them."""

import json
from dataclasses import asdict

from zoo_testing import make_record

from zoo.leaderboard.draw import draw_tables
from zoo.leaderboard.example_plots import copy_figures, example_plot_lines
from zoo_tasks.detection.spec import DRONEDINO


def _write(results, key, extra):
    record = make_record("dronedino", "dino", "HIT-UAV", {"test/mAP": 0.1}, extra=extra)
    (results / f"{key}.json").write_text(json.dumps(asdict(record)))


def test_figures_named_by_records_are_copied_and_embedded(tmp_path):
    results, run = tmp_path / "results" / "dronedino", tmp_path / "runs"
    results.mkdir(parents=True)
    run.mkdir()
    (run / "detections_ir.png").write_bytes(b"\x89PNG ir")
    _write(results, "dino__HIT-UAV__seed0", {"detection_figures": {"ir": str(run / "detections_ir.png")}})
    _write(results, "dino__RGB__seed0", {"detection_figures": {"rgb": str(run / "gone.png")}})
    _write(results, "dense__RGB__seed0", {})

    copied, missing = copy_figures("dronedino", "detection_figures", results)
    assert [p.name for p in copied] == ["dino__HIT-UAV__seed0__ir.png"]
    assert (results / "plots" / "dino__HIT-UAV__seed0__ir.png").read_bytes() == b"\x89PNG ir"
    assert missing == [run / "gone.png"]  # a run folder absent here is reported, not an error

    lines = example_plot_lines("dronedino", "Detections", results)
    assert lines == [
        "## Detections",
        "",
        "![dino__HIT-UAV__seed0__ir](results/dronedino/plots/dino__HIT-UAV__seed0__ir.png)",
        "",
    ]
    assert "![dino__HIT-UAV__seed0__ir]" in draw_tables(DRONEDINO, [], leaderboard=tmp_path)
    assert example_plot_lines("dronedino", "Detections", tmp_path / "none") == []
