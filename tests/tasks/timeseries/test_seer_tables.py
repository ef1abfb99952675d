"""SEER's extra leaderboard tables (tasks/timeseries/tables.py): the target verdicts, the robustness summary, the
diagnostics from old records (expert load in ``extra``) and new ones (expert load in the routing summary)."""

from __future__ import annotations

from zoo.leaderboard.record import RunRecord
from zoo_tasks.timeseries.spec import SEER
from zoo_tasks.timeseries.tables import seer_tables


def _record(method, dataset, mse, **extra_metrics):
    metrics = {"test/mse": mse, "test/mae": mse, **extra_metrics}
    return RunRecord(
        task="seer",
        method=method,
        dataset=dataset,
        metrics=metrics,
        seed=0,
        config={},
        versions={},
        wall_time_s=1.0,
        commit="",
        machine={},
    )


def test_tables_judge_the_targets():
    records = [
        _record("seer", "ETTh1/96", 0.380, **{"test/mse_noise": 0.40}),  # below both published (0.386, 0.414)
        _record("dense", "ETTh1/96", 0.390, **{"test/mse_noise": 0.45}),
        _record("seer", "ETTh1/192", 0.450),  # above iTransformer's 0.441
        _record("dense", "ETTh1/192", 0.440),
        _record("seer", "ETTh1/336", 0.48704),  # ties iTransformer's 0.487 at the printed precision
        _record("seer", "ETTh1/720", 0.5006),  # 0.501 > PatchTST's 0.500
    ]
    text = seer_tables(records)
    assert "| ETTh1/96 | 0.380 / 0.380 | 0.390 / 0.390 | — / — | 0.386 / 0.405 | 0.414 / 0.419 | ✓ |" in text
    assert "| ETTh1/192 |" in text and "| ✗ |" in text
    assert "| ETTh1/336 | 0.487 / 0.487 | — / — | — / — | 0.487 / 0.458 | 0.501 / 0.466 | ✓ |" in text
    assert "| ETTh1/720 | 0.501 / 0.501 | — / — | — / — | 0.503 / 0.491 | 0.500 / 0.488 | ✗ |" in text
    assert "ETT cells meeting the target: 2 of 4 run (of 16)." in text
    assert "| noise | 0.400 | 0.450 | 1 of 1 |" in text


def test_page_marks_wall_times_that_miss_the_time_before_a_restart():
    from zoo.leaderboard.render import render_task

    old_resume = _record("seer", "ETTh1/96", 0.38)
    old_resume.extra = {"resumed_from_checkpoint": True}  # written before checkpoints carried the elapsed time
    new_resume = _record("dense", "ETTh1/96", 0.39)
    new_resume.extra = {"resumed_from_checkpoint": True, "wall_time_before_resume_s": 120.0}
    page = render_task(SEER, [old_resume, new_resume])
    assert "| ETTh1/96 | 1.000 (n=1) ‡ | 1.000 (n=1) |" in page
    assert "covers only the last process" in page
    assert "‡" not in render_task(SEER, [new_resume])


def test_diagnostics_read_the_expert_load_from_old_extras_and_new_routing_summaries():
    old = _record("seer", "ETTh1/96", 0.38)
    old.extra = {
        "diagnostics": {"clean": {"replaced_fraction": 0.5, "expert_load": [0.75, 0.25], "expert_load_cv": 0.5}}
    }
    new = _record("seer", "ETTh1/192", 0.44)
    new.extra = {"diagnostics": {"clean": {"replaced_fraction": 0.25}}}
    new.routing = {"test": {"net.embedding.moe": {"load": [0.5, 0.25, 0.25, 0.0]}}}  # RoutingSummary.to_dict()
    text = seer_tables([old, new])
    assert "| ETTh1/96 | 50.00% / — / — / — | 0.75 0.25 | 0.50 |" in text
    # cv of (0.5, 0.25, 0.25, 0): population std 0.1768 / mean 0.25
    assert "| ETTh1/192 | 25.00% / — / — / — | 0.50 0.25 0.25 0.00 | 0.71 |" in text
