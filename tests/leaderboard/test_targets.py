"""Declared targets judged on records by the pages' one rule (``zoo.leaderboard.compare``): every verdict follows
the metric's direction, rests on a paired interval with n ≥ 3, keeps the comparison's outcome apart from whether
the claim is met, and a tie never meets a claim of improvement."""

from __future__ import annotations

import pytest

from zoo.errors import ConfigError
from zoo.leaderboard.compare import BETTER, TIE, TOO_FEW, WORSE
from zoo.leaderboard.record import RunRecord, read_records
from zoo.leaderboard.results_table import ResultTable
from zoo.leaderboard.targets import (
    AtLeast,
    BeatsBestPublished,
    BeatsBy,
    BeatsOnAverage,
    ImprovesOnFraction,
    NotWorse,
    WithinOfCell,
    WithinOfPublished,
    targets_section,
)
from zoo.registry import BenchmarkRow, get_task


def _rec(method, dataset, value, seed=0, fold=None, metric="test/acc", **kw) -> RunRecord:
    return RunRecord(
        task="t", method=method, dataset=dataset, metrics={metric: value}, seed=seed, config={}, versions={},
        wall_time_s=1.0, commit="c", machine={}, fold=fold, **kw,
    )  # fmt: skip


def _runs(method, dataset, values, metric="test/acc"):
    """One record per seed 0, 1, 2, ... with these values."""
    return [_rec(method, dataset, v, seed=s, metric=metric) for s, v in enumerate(values)]


def _table(records, rows=(), higher=("test/acc",)) -> ResultTable:
    return ResultTable(rows, records, higher)


def _outcomes(verdicts):
    return [(v.comparison.outcome if v.comparison else None, v.met) for v in verdicts]


def test_at_least_is_met_only_when_the_runs_clear_the_bar_beyond_their_interval():
    table = _table(_runs("moe", "A", [0.82, 0.84, 0.83]))
    assert _outcomes(AtLeast("moe", "A", "test/acc", 0.80).verdicts(table)) == [(BETTER, True)]
    assert _outcomes(AtLeast("moe", "A", "test/acc", 0.831).verdicts(table)) == [(TIE, False)]  # a tie: not shown
    assert _outcomes(AtLeast("moe", "A", "test/acc", 0.90).verdicts(table)) == [(WORSE, False)]
    assert AtLeast("moe", "B", "test/acc", 0.5).verdicts(table)[0].met is None  # not run
    short = _table(_runs("moe", "A", [0.82, 0.84]))
    assert _outcomes(AtLeast("moe", "A", "test/acc", 0.5).verdicts(short)) == [(TOO_FEW, None)]  # n = 2
    lower = _table(_runs("moe", "A", [0.30, 0.29, 0.31], metric="test/mse"), higher=())
    assert _outcomes(AtLeast("moe", "A", "test/mse", 0.35).verdicts(lower)) == [(BETTER, True)]  # lower is better


def test_beats_best_published_judges_each_cell_at_the_printed_decimals_and_counts_the_met_ones():
    rows = (
        BenchmarkRow("moe", "A", "x.yaml", published={"X:test/mse": 0.300, "Y:test/mse": 0.310}),
        BenchmarkRow("moe", "B", "x.yaml", published={"X:test/mse": 0.200}),
        BenchmarkRow("moe", "C", "x.yaml", published={"X:test/mse": 0.100}),
    )
    recs = _runs("moe", "A", [0.3004, 0.3002, 0.2996], "test/mse")  # 0.300 at three decimals: a tie, not shown
    recs += _runs("moe", "B", [0.2100, 0.2110, 0.2090], "test/mse")  # above 0.200: worse
    table = _table(recs, rows, higher=())
    target = BeatsBestPublished("moe", "test/mse", min_cells=2, datasets=("A", "B", "C"))
    summary, a, b = target.verdicts(table)
    assert _outcomes([a, b]) == [(TIE, False), (WORSE, False)]
    assert summary.ours.startswith("0 of 3 met; missed: A, B") and summary.met is False  # C alone cannot make 2
    recs += _runs("moe", "C", [0.09, 0.091, 0.089], "test/mse")  # below 0.100 beyond its interval: met
    summary, *_ = target.verdicts(_table(recs, rows, higher=()))
    assert summary.ours.startswith("1 of 3 met") and summary.met is False  # 1 of 3 cells met, 2 asked
    one_seed = _table(_runs("moe", "A", [0.1], "test/mse"), rows, higher=())
    assert _outcomes(target.verdicts(one_seed)[1:]) == [(TOO_FEW, None)]  # one seed below published: not a win


def test_beats_on_average_pairs_the_runs_of_the_cells_every_method_has():
    recs = _runs("moe", "A", [0.90, 0.91, 0.92]) + _runs("dense", "A", [0.80, 0.80, 0.81])
    recs += _runs("moe", "B", [0.1, 0.1, 0.1]) + _runs("dense", "C", [0.99, 0.99, 0.99])  # B, C: not common
    (v,) = BeatsOnAverage("moe", ("dense",), "test/acc").verdicts(_table(recs))
    assert _outcomes([v]) == [(BETTER, True)] and v.comparison.n == 3 and v.where == "test/acc: A"
    tie = _runs("moe", "A", [0.8001, 0.80, 0.8002]) + _runs("dense", "A", [0.80, 0.8001, 0.80])  # +0.0001
    assert _outcomes(BeatsOnAverage("moe", ("dense",), "test/acc").verdicts(_table(tie))) == [(TIE, False)]


def test_beats_on_average_against_several_others_is_holm_corrected():
    recs = _runs("moe", "A", [0.4, 1.0, 1.5, 0.1, 1.3]) + _runs("x", "A", [0.0] * 5)  # alone: better, p ~ 0.03
    alone = BeatsOnAverage("moe", ("x",), "test/acc").verdicts(_table(recs))
    assert _outcomes(alone) == [(BETTER, True)]
    recs += _runs("y", "A", [0.0, 1.0, 2.0, 0.0, 1.5])  # a second baseline, and a tie with it
    x, y = BeatsOnAverage("moe", ("x", "y"), "test/acc").verdicts(_table(recs))
    assert _outcomes([x, y]) == [(TIE, False), (TIE, False)] and "(Holm over 2)" in x.where


def test_within_of_published_and_not_worse_are_per_dataset_and_a_tie_is_not_shown():
    rows = (BenchmarkRow("dense", "A", "x.yaml", published={"test/return": 800.0}),)
    recs = _runs("dense", "A", [730.0, 732.0, 728.0], "test/return") + _runs(
        "moe", "A", [740.0, 700.0, 760.0], "test/return"
    )
    table = _table(recs, rows, higher=("test/return",))
    (v,) = WithinOfPublished("dense", "test/return", 0.10).verdicts(table)
    assert _outcomes([v]) == [(BETTER, True)] and "(-9%)" in v.ours  # every run within 10 %: -8.5 to -9 %
    assert _outcomes(WithinOfPublished("dense", "test/return", 0.05).verdicts(table)) == [(WORSE, False)]
    assert _outcomes(NotWorse("moe", "dense", "test/return").verdicts(table)) == [(TIE, False)]
    assert _outcomes(NotWorse("dense", "moe", "test/return").verdicts(table)) == [(TIE, False)]
    clear = _table(_runs("a", "A", [1.0, 1.1, 0.9]) + _runs("b", "A", [2.0, 2.1, 1.9]))
    assert _outcomes(NotWorse("a", "b", "test/acc").verdicts(clear)) == [(WORSE, False)]


def test_within_of_published_reads_negative_published_values_the_right_way_round():
    rows = (BenchmarkRow("dense", "A", "x.yaml", published={"test/return": -100.0}),)
    recs = _runs("dense", "A", [-105.0, -104.0, -106.0], "test/return")  # 5 % below
    table = _table(recs, rows, higher=("test/return",))
    assert WithinOfPublished("dense", "test/return", 0.10).verdicts(table)[0].met is True
    better = _runs("dense", "A", [-50.0, -51.0, -49.0], "test/return")  # above published: met
    assert WithinOfPublished("dense", "test/return", 0.10).verdicts(_table(better, rows, ("test/return",)))[0].met
    zero = (BenchmarkRow("dense", "A", "x.yaml", published={"test/return": 0.0}),)
    assert WithinOfPublished("dense", "test/return", 0.10).verdicts(_table(recs, zero, ("test/return",))) == []


def test_improves_on_fraction_counts_the_cells_the_rule_calls_better():
    recs = _runs("a+m", "D", [0.9, 0.91, 0.92]) + _runs("a", "D", [0.8, 0.8, 0.81])  # better
    recs += _runs("b+m", "D", [0.7, 0.69, 0.72]) + _runs("b", "D", [0.7, 0.71, 0.70])  # +0.0000: a tie
    recs.append(_rec("a+m", "D", 0.1, seed=7))  # no partner: not compared
    target = ImprovesOnFraction((("a+m", "a"), ("b+m", "b")), "test/acc", 0.5)
    share, a, b = target.verdicts(_table(recs))
    assert _outcomes([a, b]) == [(BETTER, True), (TIE, False)] and a.comparison.n == 3
    assert share.ours == "1 of 2 cells better (50%)" and share.met is True and share.outcome == "1 better, 1 tie"
    assert ImprovesOnFraction((("a+m", "a"), ("b+m", "b")), "test/acc", 0.6).verdicts(_table(recs))[0].met is False
    single = ImprovesOnFraction((("b+m", "b"),), "test/acc", 1.0, label="B > b").verdicts(_table(recs))
    assert [(v.target, v.met, v.comparison.outcome) for v in single] == [("B > b", False, TIE)]  # one cell, one row


def test_beats_by_a_margin_compares_each_baseline_paired_and_holm_corrected():
    recs = _runs("moe", "A", [33.0, 33.2, 33.1], "test/psnr")
    recs += _runs("mlp", "A", [31.0, 31.1, 30.9], "test/psnr") + _runs("hex", "A", [32.5, 32.5, 32.6], "test/psnr")
    table = _table(recs, higher=("test/psnr",))
    mlp, hexplane = BeatsBy("moe", ("mlp", "hex"), "test/psnr", margin=0.5).verdicts(table)
    assert mlp.target == "moe test/psnr ≥ mlp + 0.5" and mlp.where == "A (Holm over 2)"
    assert _outcomes([mlp, hexplane]) == [(BETTER, True), (TIE, False)]  # 33.1 - 32.53 - 0.5 ~ 0.07: a tie
    assert mlp.ours == "33.10 (n=3) vs mlp 31.00 (n=3)"
    assert _outcomes(BeatsBy("moe", ("mlp",), "test/psnr", margin=3.0).verdicts(table)) == [(WORSE, False)]
    not_worse = BeatsBy("moe", ("hex",), "test/psnr", margin=-0.5).verdicts(table)  # 33.1 - 32.53 + 0.5: better
    assert _outcomes(BeatsBy("moe", ("hex",), "test/psnr").verdicts(table)) == [(BETTER, True)]
    assert not_worse[0].met is True


def test_beats_by_follows_a_lower_is_better_metric_and_a_ratio():
    recs = _runs("moe", "A", [0.20, 0.21, 0.19], "test/mse") + _runs("x", "A", [0.30, 0.30, 0.31], "test/mse")
    table = _table(recs, higher=())
    (v,) = BeatsBy("moe", ("x",), "test/mse", margin=0.05).verdicts(table)
    assert v.target == "moe test/mse ≤ x − 0.05" and _outcomes([v]) == [(BETTER, True)]
    (r,) = BeatsBy("moe", ("x",), "test/mse", ratio=1.5).verdicts(table)  # 0.20 ≤ 0.303 / 1.5 = 0.202: a tie
    assert r.target == "moe test/mse ≤ x / 1.5" and _outcomes([r]) == [(TIE, False)]  # a ratio claims a gain


def test_beats_by_a_ratio_and_when_it_cannot_judge():
    recs = _runs("sphere", "S", [0.36, 0.35, 0.37]) + _runs("moe", "S", [0.35, 0.36, 0.36])
    (v,) = BeatsBy("sphere", ("moe",), "test/acc", ratio=1.5).verdicts(_table(recs))
    assert v.target == "sphere test/acc ≥ 1.5× moe" and _outcomes([v]) == [(WORSE, False)]  # 1.00x
    assert v.comparison.mean == pytest.approx(0.36 - 1.5 * (0.35 + 0.36 + 0.36) / 3)
    zero = _runs("sphere", "S", [0.0, 0.0, 0.0]) + _runs("moe", "S", [0.0, 0.0, 0.0])
    assert _outcomes(BeatsBy("sphere", ("moe",), "test/acc", ratio=1.5).verdicts(_table(zero))) == [(TIE, False)]
    negative = _runs("sphere", "S", [0.3, 0.3, 0.3]) + _runs("moe", "S", [-0.5, -0.5, -0.4])
    (neg,) = BeatsBy("sphere", ("moe",), "test/acc", ratio=1.5).verdicts(_table(negative))
    assert neg.met is None and "ratio undefined" in neg.ours
    (empty,) = BeatsBy("sphere", ("moe",), "test/acc", ratio=1.5).verdicts(_table(_runs("moe", "S", [0.2])))
    assert empty.met is None and empty.ours == "no cells with runs yet"
    assert targets_section([BeatsBy("sphere", ("moe",), "test/acc", label="claim")], _table([]))[-2] == (
        "| claim | test/acc | no cells with runs yet | — | — | — | not yet judged |"
    )
    with pytest.raises(ConfigError, match="BeatsBy"):
        BeatsBy("sphere", ("moe",), "test/acc", margin=0.1, ratio=1.5)


def test_within_of_cell_compares_a_cell_with_another_rows_cell():
    recs = _runs("unified", "IR+RGB", [0.30, 0.31, 0.29], "test/ir/AP") + _runs(
        "single", "IR", [0.315] * 3, "test/ir/AP"
    )
    table = _table(recs, higher=("test/ir/AP",))
    (v,) = WithinOfCell("unified", "IR+RGB", "single", "IR", "test/ir/AP", margin=0.01).verdicts(table)
    assert v.target == "unified test/ir/AP ≥ single (IR) − 0.01" and v.where == "IR+RGB"
    assert _outcomes([v]) == [(TIE, False)]  # 0.30 - 0.315 + 0.01 = -0.005 ± 0.025: not shown
    far = WithinOfCell("unified", "IR+RGB", "single", "IR", "test/ir/AP", margin=0.0).verdicts(
        _table(_runs("unified", "IR+RGB", [0.20, 0.21, 0.19], "test/ir/AP") + recs[3:], higher=("test/ir/AP",))
    )
    assert _outcomes(far) == [(WORSE, False)]
    assert WithinOfCell("u", "A", "s", "C", "test/mse").verdicts(_table([], higher=()))[0].met is None


def test_the_section_shows_n_the_gain_its_interval_the_outcome_and_the_claim():
    table = _table(_runs("moe", "A", [0.90, 0.91, 0.92]) + _runs("dense", "A", [0.905, 0.91, 0.915]))
    lines = targets_section(
        [AtLeast("moe", "A", "test/acc", 0.5), BeatsOnAverage("moe", ("dense",), "test/acc")], table
    )
    assert lines[0] == "## Targets" and "| target | where | ours | n | Δ [95 % CI] | outcome | claim |" in lines
    assert lines[-3] == "| moe test/acc ≥ 0.5 | A | 0.910 (n=3) | 3 | +0.4100 [+0.3852, +0.4348] | better ✓ | met |"
    # a claim at a tie: outcome "tie =", the claim "not shown (tie)", never ✓ (a strict claim or a bar alike)
    assert lines[-2] == (
        "| moe > dense on average | test/acc: A | moe 0.910 vs dense 0.910 | 3 | +0.0000 [-0.0124, +0.0124] | tie = "
        "| not shown (tie) |"
    )
    at_the_bar = targets_section([AtLeast("moe", "A", "test/acc", 0.91)], table)[-2]
    assert at_the_bar.endswith("| tie = | not shown (tie) |") and "✓" not in at_the_bar
    assert targets_section([], table) == []


def test_numbers_keep_their_meaningful_decimals_and_a_std_follows_its_mean():
    from zoo.leaderboard.numbers import fmt_number
    from zoo.leaderboard.render import mean_std

    assert [fmt_number(v) for v in (0.12345, 28.8580, 683.24)] == ["0.123", "28.86", "683.2"]
    assert mean_std([600.0, 700.0, 750.0]) == "683.3 ± 76.4 (n=3)"  # not "± 76.38"
    assert mean_std([0.5, 0.7]) == "0.600 ± 0.141 (n=2)"


def _committed(task: str) -> ResultTable:
    records = read_records(task)
    if not records:
        pytest.skip(f"no committed {task} records")
    spec = get_task(task)
    return ResultTable(spec.benchmark, records, spec.higher_is_better)


def test_committed_dygmoce_records_make_the_zero_difference_a_tie():
    """Issue 57: DyGMoCE vs its dense twin at +0.0000 transductive AP was marked ✓."""
    spec, table = get_task("dygmoce"), _committed("dygmoce")
    (v,) = next(t for t in spec.targets if getattr(t, "label", "").startswith("DyGMoCE > dense twin, trans")).verdicts(
        table
    )
    assert v.comparison.outcome == TIE and v.met is False and v.comparison.delta().startswith("+0.0000 [")


def test_committed_c2gmoe_records_do_not_call_a_difference_of_0_0001_a_win():
    """Issue 57: "c2gmoe_tuned > gcn_tuned" was marked ✓ at +0.0001 accuracy."""
    spec, table = get_task("c2gmoe"), _committed("c2gmoe")
    target = next(t for t in spec.targets if isinstance(t, BeatsOnAverage) and t.method == "c2gmoe_tuned")
    (v,) = target.verdicts(table)
    assert v.comparison.outcome != BETTER and v.met is not True
    (row,) = [line for line in targets_section([target], table) if line.startswith("| c2gmoe_tuned")]
    assert "✓" not in row and row.endswith("| not shown (tie) |")
