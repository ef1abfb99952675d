"""SEER's leaderboard page: the targets declared in tasks/timeseries/spec.py as judged by the generic renderer, and
the task's own sections (declared in spec.TABLES, drawn by zoo.leaderboard.draw): the robustness layout and the
diagnostics from old records (expert load in ``extra``) and new ones (expert load in the routing summary)."""

from __future__ import annotations

from zoo.leaderboard.draw import draw_tables
from zoo.leaderboard.record import RunRecord
from zoo.leaderboard.render import render_task
from zoo_tasks.timeseries.spec import HORIZONS, SEER


def _record(method, dataset, mse, seed=0, **extra_metrics):
    metrics = {"test/mse": mse, "test/mae": mse, **extra_metrics}
    return RunRecord(
        task="seer",
        method=method,
        dataset=dataset,
        metrics=metrics,
        seed=seed,
        config={},
        versions={},
        wall_time_s=1.0,
        commit="",
        machine={},
    )


def _seeds(method, dataset, values, **extra_metrics):
    return [_record(method, dataset, v, s, **extra_metrics) for s, v in enumerate(values)]


def test_spec_targets_judge_the_published_cells_and_the_dense_twin():
    noise = {"test/mse_noise": 0.40}
    records = [
        *_seeds("seer", "ETTh1/96", [0.380, 0.381, 0.379], **noise),  # below both published (0.386, 0.414)
        *_seeds("dense", "ETTh1/96", [0.390, 0.391, 0.389], **{"test/mse_noise": 0.45}),
        *_seeds("seer", "ETTh1/192", [0.450, 0.451, 0.449]),  # above iTransformer's 0.441
        *_seeds("dense", "ETTh1/192", [0.430, 0.431, 0.429]),
        *_seeds("seer", "ETTh1/336", [0.48704, 0.48696, 0.4870]),  # ties iTransformer's 0.487 at the printed precision
        *_seeds("seer", "ETTh1/720", [0.5006] * 3),  # 0.501 > PatchTST's 0.500
        *_seeds("seer", "Weather/96", [0.100] * 3),  # beats both, but Weather is not one of the 16 ETT cells
    ]
    page = render_task(SEER, records)
    assert (
        "| seer test/mse ≤ best published on ≥ 10 of 16 cells | ETT cells | 1 of 16 met; missed: ETTh1/192, "
        "ETTh1/336, ETTh1/720; 12 not judged (n too small or not run) | — | — | 1 better, 1 tie, 2 worse | "
        "not yet judged |" in page
    )
    assert (
        "| seer test/mse ≤ best published | ETTh1/336 | 0.487 (n=3) vs 0.487 | 3 | +0.0000 [+0.0000, +0.0000] | tie = |"
        in page
    )
    # on the runs both cells hold: SEER 0.01 better on ETTh1/96 and 0.02 worse on ETTh1/192: a tie, not a win
    verdict = "| seer < dense on average | test/mse: ETTh1/96, ETTh1/192 | seer 0.415 vs dense 0.410 (cell by cell: "
    assert verdict + "1 better, 1 worse) | 6 | -0.0050 [-0.0222, +0.0122] | tie = | not shown (tie) |" in page
    noisy = "| seer < dense on average | test/mse_noise: ETTh1/96 | seer 0.400 vs dense 0.450 | 3 | +0.0500 [+0.0500"
    assert noisy in page and page.split(noisy)[1].split("\n")[0].endswith("| better ✓ | met |")
    assert "| test/mse_spike | no common cells yet | — | — | — | not yet judged |" in page
    assert "## SEER vs published" not in page  # the generic per-metric tables hold those numbers now


def test_best_published_target_is_missed_once_too_few_cells_are_left():
    records = [r for ds in ("ETTh1", "ETTh2") for h in HORIZONS for r in _seeds("seer", f"{ds}/{h}", [9.0] * 3)]
    records += _seeds("seer", "ETTm1/96", [0.1] * 3)
    page = render_task(SEER, records)
    assert "| ETT cells | 1 of 16 met; missed: ETTh1/96," in page
    assert "7 not judged (n too small or not run) | — | — | 1 better, 8 worse | not met |" in page


def test_robustness_layout_shows_every_method_under_each_condition():
    records = [
        _record("seer", "ETTh1/96", 0.380, **{"test/mse_noise": 0.40}),
        _record("dense", "ETTh1/96", 0.390, **{"test/mse_noise": 0.45}),
        _record("patchtst", "ETTh1/96", 0.41),
        _record("patchtst", "ETTh1/192", 0.42),  # no SEER or dense run: no robustness row
    ]
    text = draw_tables(SEER, records)
    assert "| ETTh1/96 | 0.380 / 0.390 / 0.410 | — / — / — | — / — / — | 0.400 / 0.450 / — |" in text
    assert "| ETTh1/192 |" not in text


def test_page_marks_wall_times_that_miss_the_time_before_a_restart():
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
    text = draw_tables(SEER, [old, new])
    assert "| ETTh1/96 | 50.00% / — / — / — | 0.75 0.25 | 0.50 |" in text
    # cv of (0.5, 0.25, 0.25, 0): population std 0.1768 / mean 0.25
    assert "| ETTh1/192 | 25.00% / — / — / — | 0.50 0.25 0.25 0.00 | 0.71 |" in text
