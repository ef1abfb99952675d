"""The pages' one comparison rule (issue 57): better / tie / worse from a paired 95 % t-interval, "n too small"
below three pairs, Holm within a row of many comparisons, and the CPU kinds named in the verdict."""

from __future__ import annotations

import math

import pytest
from zoo_testing import make_record

from zoo.leaderboard.compare import (
    BETTER,
    OTHER_CPU,
    TIE,
    TOO_FEW,
    WORSE,
    against,
    compare_cells,
    holm,
    paired,
    t_comparison,
)
from zoo.leaderboard.results_table import ResultTable

AMD = {"cpu": "AMD EPYC", "cpu_isa": "AVX512", "cpu_id": "family 25 model 17 stepping 1"}
INTEL = {"cpu": "Intel(R) Xeon(R) Processor", "cpu_isa": "AVX512", "cpu_id": "family 6 model 167 stepping 1"}


def _cell(values):
    return {(seed, None): v for seed, v in enumerate(values)}


def test_a_difference_of_zero_is_a_tie_however_the_runs_spread():
    spread = paired(_cell([0.80, 0.82, 0.81]), _cell([0.81, 0.81, 0.81]), higher=True)  # -0.01, +0.01, 0
    assert (spread.n, spread.outcome) == (3, TIE) and spread.mean == pytest.approx(0.0, abs=1e-15)
    assert spread.delta() == "+0.0000 [-0.0248, +0.0248]"  # as a page prints it: a rounding zero is +0
    same = paired(_cell([0.9, 0.8, 0.7]), _cell([0.9, 0.8, 0.7]), higher=True)  # every pair equal: no spread at all
    assert same.outcome == TIE and same.verdict == "tie ="
    assert same.delta() == "+0.0000 [+0.0000, +0.0000]"


def test_two_pairs_are_too_few_to_call_even_a_large_difference():
    c = paired(_cell([0.9, 0.95]), _cell([0.1, 0.12]), higher=True)
    assert (c.n, c.outcome, c.verdict) == (2, TOO_FEW, "n too small")
    assert t_comparison([]).outcome == TOO_FEW and t_comparison([]).delta() == "—"


def test_a_clear_win_is_better_and_its_interval_is_students_t():
    c = paired(_cell([0.90, 0.91, 0.92]), _cell([0.80, 0.80, 0.80]), higher=True)
    assert c.outcome == BETTER and c.verdict == "better ✓"
    # gains 1, 2, 3: mean 2, std 1, so 2 ± t(0.975, 2 dof) / sqrt(3) = 2 ± 4.3027 / 1.7321
    wide = t_comparison([1.0, 2.0, 3.0])
    assert wide.interval == pytest.approx((2 - 4.302653 / math.sqrt(3), 2 + 4.302653 / math.sqrt(3)), rel=1e-6)
    assert wide.outcome == TIE  # the interval holds 0
    assert t_comparison([-1.0, -1.1, -0.9]).outcome == WORSE


def test_the_metrics_direction_and_a_margin_set_the_gain():
    lower = paired(_cell([0.30, 0.31, 0.29]), _cell([0.40, 0.42, 0.41]), higher=False)  # ours lower: better
    assert lower.outcome == BETTER and lower.mean == pytest.approx(0.11)
    # "beats by ≥ 0.1": the gain less the margin, 0.11 - 0.1 = 0.01 with a spread of 0.01, is a tie
    assert paired(_cell([0.30, 0.31, 0.29]), _cell([0.40, 0.42, 0.41]), higher=False, margin=0.1).outcome == TIE
    ratio = paired(_cell([0.6, 0.62, 0.61]), _cell([0.3, 0.3, 0.3]), higher=True, ratio=1.5)  # 0.6 - 0.45 = 0.15
    assert ratio.outcome == BETTER and ratio.mean == pytest.approx(0.16)
    assert against([0.30, 0.2 * 1.5, 0.3], 0.3, higher=True).outcome == TIE  # float rounding: 0.30000000000000004


def test_holm_turns_a_borderline_win_in_a_row_of_nine_into_a_tie():
    borderline = t_comparison([0.5, 1.0, 1.5, 0.2, 1.3])
    assert borderline.outcome == BETTER and 0.05 / 9 < borderline.p < 0.05
    noise = [t_comparison([0.1 * k, -0.1, 0.05, -0.02]) for k in range(8)]
    row = holm([borderline, *noise])
    assert row[0].outcome == TIE and row[0].p == pytest.approx(min(1.0, 9 * borderline.p))
    low, high = row[0].interval
    assert low < 0 < high and row[0].level > 0.95  # the interval shown agrees with the verdict
    clear = t_comparison([1.0, 1.01, 0.99, 1.02])  # p ~ 1e-6: still better after Holm
    assert holm([clear, *noise])[0].outcome == BETTER
    assert holm([borderline]) == [borderline]  # one comparison: nothing to correct


def test_holm_intervals_always_agree_with_the_outcomes():
    """A rejected comparison's interval excludes 0, a kept one's holds it, even where the second-smallest p would
    pass its own step on its own (Holm stops at the first that does not)."""
    row = holm([t_comparison(g) for g in ([1.0, 1.4, 0.6], [0.5, 0.55, 0.45], [0.3, 0.9, 0.2, 0.7], [0.1, -0.1, 0.0])])
    for c in row:
        low, high = c.interval
        assert (low > 0 or high < 0) == (c.outcome in (BETTER, WORSE))
    tested = [c for c in row if c.n >= 3]
    assert len(tested) == 4 and holm([t_comparison([1.0, 2.0])] + row)[0].outcome == TOO_FEW  # n < 3: untested


def test_cells_from_different_cpu_kinds_are_named_in_the_verdict():
    def rec(method, value, seed, machine):
        return make_record("t", method, "A", {"test/acc": value}, seed=seed, machine=dict(machine))

    ours = [rec("moe", v, s, AMD) for s, v in enumerate([0.90, 0.91, 0.92])]
    theirs_intel = [rec("dense", 0.80, s, INTEL) for s in range(3)]
    table = ResultTable((), ours + theirs_intel, ("test/acc",))
    c = compare_cells(table, "test/acc", ("moe", "A"), ("dense", "A"))
    assert c.note == OTHER_CPU and c.verdict == "better ✓ (cells from different CPU kinds)"
    same = ResultTable((), ours + [rec("dense", 0.80, s, AMD) for s in range(3)], ("test/acc",))
    assert compare_cells(same, "test/acc", ("moe", "A"), ("dense", "A")).note == ""
    old = [rec("dense", 0.80, s, {"cpu": "AMD EPYC"}) for s in range(3)]  # model not recorded: not taken as other
    assert (
        compare_cells(ResultTable((), ours + old, ("test/acc",)), "test/acc", ("moe", "A"), ("dense", "A")).note == ""
    )
    tie = ResultTable((), ours + [rec("dense", v, s, INTEL) for s, v in enumerate([0.92, 0.90, 0.91])], ("test/acc",))
    assert compare_cells(tie, "test/acc", ("moe", "A"), ("dense", "A")).verdict == (
        "tie = (cells from different CPU kinds)"
    )


def test_cells_pair_only_the_runs_both_hold_and_several_datasets_pool_their_pairs():
    recs = [make_record("t", "moe", "A", {"m": v}, seed=s) for s, v in enumerate([0.9, 0.91, 0.92, 0.5])]
    recs += [make_record("t", "dense", "A", {"m": 0.8}, seed=s) for s in range(3)]  # no seed 3: moe's 0.5 unpaired
    table = ResultTable((), recs, ("m",))
    assert compare_cells(table, "m", ("moe", "A"), ("dense", "A")).n == 3
    recs += [make_record("t", m, "B", {"m": 0.5}, seed=0) for m in ("moe", "dense")]
    pooled = compare_cells(
        ResultTable((), recs, ("m",)), "m", [("moe", "A"), ("moe", "B")], [("dense", "A"), ("dense", "B")]
    )
    assert pooled.n == 4 and pooled.mean == pytest.approx((0.1 + 0.11 + 0.12 + 0) / 4)
