"""The fidelity page's short-training section (scripts/parity/render_short.py): Welch's interval equals scipy's,
verdicts follow the metric's direction, and each comparison's budget and differences are printed under the table."""

from __future__ import annotations

import pytest
from scipy import stats

from scripts.parity import render_short
from scripts.parity.short_training import comparisons


def test_welch_interval_is_scipys():
    ours, theirs = [0.41, 0.43, 0.40], [0.45, 0.44, 0.48]
    diff, low, high = render_short.welch(ours, theirs)
    expected = stats.ttest_ind(ours, theirs, equal_var=False).confidence_interval(0.95)
    assert diff == pytest.approx(sum(ours) / 3 - sum(theirs) / 3)
    assert (low, high) == pytest.approx((expected.low, expected.high))


@pytest.mark.parametrize(
    ("ours", "theirs", "higher", "expected"),
    [
        ([0.40, 0.41, 0.40], [0.50, 0.51, 0.50], False, "better ✓"),  # lower MSE is better
        ([0.40, 0.41, 0.40], [0.50, 0.51, 0.50], True, "worse ✗"),  # lower accuracy is worse
        ([0.40, 0.50, 0.45], [0.44, 0.46, 0.45], False, "tie ="),
    ],
)
def test_verdicts_follow_the_metrics_direction(ours, theirs, higher, expected):
    assert render_short.verdict(render_short.welch(ours, theirs), higher) == expected


def test_a_deterministic_computation_equal_on_both_sides_is_a_tie():
    # EdgeBank: no parameters, fixed negatives; the sides agree to the last bits but the means may not
    ours, theirs = [0.762014627456665] * 3, [0.7620146011827352] * 3  # float32 logging vs float64
    assert render_short.verdict(render_short.welch(ours, theirs), True) == "tie ="
    assert render_short.verdict(render_short.welch(ours, [0.7621] * 3), True) == "worse ✗"


def test_one_run_a_side_is_not_judged():
    assert render_short.verdict(render_short.welch([0.4], [0.5, 0.6]), False) == "n too small"


def test_the_section_shows_both_sides_budget_and_differences():
    spec = comparisons()["patchtst-etth1"]

    def record(side: str, seed: int, mse: float) -> dict:
        return {"comparison": spec.name, "side": side, "seed": seed, "metrics": {"test/mse": mse, "test/mae": 0.4}}

    records = [record("theirs", s, 0.45 + s / 100) for s in range(3)]
    records += [record("ours", s, 0.44 + s / 100) for s in range(3)]
    text = "\n".join(render_short.section(records, comparisons()))
    row = "| patchtst-etth1 | seer / patchtst | yuqinie98/PatchTST@204c21efe0 | test/mse | 0.4600 ± 0.0100 (n=3) |"
    assert row in text
    assert "-0.0100 [" in text and "tie =" in text
    assert spec.budget in text
    assert all(f"differs: {d}" in text for d in spec.differences)
