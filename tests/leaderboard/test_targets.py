"""Declared targets judged on records: each verdict follows the metric's direction and says when it can't judge."""

from __future__ import annotations

import pytest

from zoo.errors import ConfigError
from zoo.leaderboard.record import RunRecord
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
from zoo.registry import BenchmarkRow


def _rec(method, dataset, value, seed=0, fold=None, metric="test/acc", **kw) -> RunRecord:
    return RunRecord(
        task="t", method=method, dataset=dataset, metrics={metric: value}, seed=seed, config={}, versions={},
        wall_time_s=1.0, commit="c", machine={}, fold=fold, **kw,
    )  # fmt: skip


def _table(records, rows=(), higher=("test/acc",)) -> ResultTable:
    return ResultTable(rows, records, higher)


def test_at_least_uses_the_metric_direction_and_waits_for_runs():
    table = _table([_rec("moe", "A", 0.82), _rec("moe", "A", 0.84, seed=1)])
    assert AtLeast("moe", "A", "test/acc", 0.83).verdicts(table)[0].met is True
    assert AtLeast("moe", "A", "test/acc", 0.831).verdicts(table)[0].met is False
    assert AtLeast("moe", "B", "test/acc", 0.5).verdicts(table)[0].met is None
    lower = _table([_rec("moe", "A", 0.30, metric="test/mse")], higher=())
    assert AtLeast("moe", "A", "test/mse", 0.31).verdicts(lower)[0].met is True  # lower is better: 0.30 <= 0.31


def test_beats_best_published_counts_ties_at_the_printed_decimals():
    rows = (
        BenchmarkRow("moe", "A", "x.yaml", published={"X:test/mse": 0.300, "Y:test/mse": 0.310}),
        BenchmarkRow("moe", "B", "x.yaml", published={"X:test/mse": 0.200}),
        BenchmarkRow("moe", "C", "x.yaml", published={"X:test/mse": 0.100}),
    )
    recs = [_rec("moe", "A", 0.3004, metric="test/mse"), _rec("moe", "B", 0.2100, metric="test/mse")]
    table = _table(recs, rows, higher=())
    target = BeatsBestPublished("moe", "test/mse", min_cells=2, datasets=("A", "B", "C"))
    (v,) = target.verdicts(table)
    assert v.ours.startswith("1 of 2 run (of 3)") and "missed: B" in v.ours
    assert v.met is None  # C could still make it 2
    recs.append(_rec("moe", "C", 0.2, metric="test/mse"))
    assert target.verdicts(_table(recs, rows, higher=()))[0].met is False


def test_beats_on_average_uses_only_cells_every_method_has():
    recs = [_rec("moe", "A", 0.9), _rec("dense", "A", 0.8), _rec("moe", "B", 0.1), _rec("dense", "C", 0.99)]
    (v,) = BeatsOnAverage("moe", ("dense",), "test/acc").verdicts(_table(recs))
    assert v.met is True and "better on 1 of 1 cells" in v.ours
    recs.append(_rec("dense", "B", 0.5))
    assert BeatsOnAverage("moe", ("dense",), "test/acc").verdicts(_table(recs))[0].met is False  # 0.5 vs 0.65


def test_within_of_published_and_not_worse_are_per_dataset():
    rows = (BenchmarkRow("dense", "A", "x.yaml", published={"test/return": 800.0}),)
    recs = [_rec("dense", "A", 730.0, metric="test/return"), _rec("moe", "A", 740.0, metric="test/return")]
    table = _table(recs, rows, higher=("test/return",))
    (v,) = WithinOfPublished("dense", "test/return", 0.10).verdicts(table)
    assert v.met is True and "-9%" in v.ours
    assert WithinOfPublished("dense", "test/return", 0.05).verdicts(table)[0].met is False
    assert NotWorse("moe", "dense", "test/return").verdicts(table)[0].met is True
    assert NotWorse("dense", "moe", "test/return").verdicts(table)[0].met is False


def test_improves_on_fraction_pairs_runs_by_seed_and_fold():
    recs = [
        _rec("a+m", "D", 0.9, fold=0), _rec("a", "D", 0.8, fold=0),
        _rec("a+m", "D", 0.1, fold=1),  # no partner: not compared
        _rec("b+m", "D", 0.6, fold=0), _rec("b", "D", 0.7, fold=0),
    ]  # fmt: skip
    target = ImprovesOnFraction((("a+m", "a"), ("b+m", "b")), "test/acc", 0.5)
    (v,) = target.verdicts(_table(recs))
    assert v.ours.startswith("1 of 2 cells") and v.met is True
    assert "a+m vs a on D: mean Δ +0.1000, better in 1 of 1 runs" in v.ours  # what each cell's verdict rests on
    assert ImprovesOnFraction((("a+m", "a"), ("b+m", "b")), "test/acc", 0.6).verdicts(_table(recs))[0].met is False


@pytest.mark.parametrize("met, mark", [(True, "✓"), (False, "✗")])
def test_the_section_shows_each_verdict(met, mark):
    table = _table([_rec("moe", "A", 0.9)])
    value = 0.5 if met else 0.95
    lines = targets_section([AtLeast("moe", "A", "test/acc", value)], table)
    assert lines[0] == "## Targets" and lines[-2].endswith(f"| {mark} |")
    assert targets_section([], table) == []


def test_within_of_published_reads_negative_published_values_the_right_way_round():
    rows = (BenchmarkRow("dense", "A", "x.yaml", published={"test/return": -100.0}),)
    recs = [_rec("dense", "A", -105.0, metric="test/return")]
    table = _table(recs, rows, higher=("test/return",))
    assert WithinOfPublished("dense", "test/return", 0.10).verdicts(table)[0].met is True  # 5% below
    recs = [_rec("dense", "A", -50.0, metric="test/return")]  # better than published: met
    assert WithinOfPublished("dense", "test/return", 0.10).verdicts(_table(recs, rows, ("test/return",)))[0].met
    zero = (BenchmarkRow("dense", "A", "x.yaml", published={"test/return": 0.0}),)
    assert WithinOfPublished("dense", "test/return", 0.10).verdicts(_table(recs, zero, ("test/return",))) == []


def test_beats_by_a_margin_over_the_best_of_several_baselines():
    recs = [
        _rec("moe", "A", 33.0, metric="test/psnr"), _rec("moe", "A", 33.2, seed=1, metric="test/psnr"),
        _rec("mlp", "A", 31.0, metric="test/psnr"), _rec("hex", "A", 32.5, metric="test/psnr"),  # best: hex
        _rec("moe", "B", 30.0, metric="test/psnr"), _rec("mlp", "B", 29.8, metric="test/psnr"),  # hex not run on B
        _rec("moe", "C", 40.0, metric="test/psnr"),  # no baseline: not judged
    ]  # fmt: skip
    table = _table(recs, higher=("test/psnr",))
    a, b = BeatsBy("moe", ("mlp", "hex"), "test/psnr", margin=0.5).verdicts(table)
    assert (a.where, a.met, b.where, b.met) == ("A", True, "B", False)  # 33.1 >= 32.5 + 0.5; 30.0 < 29.8 + 0.5
    assert a.target == "moe test/psnr ≥ best of mlp, hex + 0.5"
    assert a.ours == "33.10 (n=2); best hex 32.50 (n=1); +0.600 over best"
    assert "best mlp" in b.ours and b.ours.endswith("+0.200 over best")
    assert BeatsBy("moe", ("mlp", "hex"), "test/psnr", margin=0.7).verdicts(table)[0].met is False
    assert BeatsBy("moe", ("mlp", "hex"), "test/psnr", margin=0.6).verdicts(table)[0].met is True  # exactly: met


def test_beats_by_follows_a_lower_is_better_metric():
    recs = [_rec("moe", "A", 0.20, metric="test/mse"), _rec("x", "A", 0.30, metric="test/mse"),
            _rec("y", "A", 0.25, metric="test/mse")]  # fmt: skip
    table = _table(recs, higher=())
    (v,) = BeatsBy("moe", ("x", "y"), "test/mse", margin=0.05).verdicts(table)
    assert v.met is True and v.target == "moe test/mse ≤ best of x, y − 0.05" and "best y 0.250" in v.ours
    assert BeatsBy("moe", ("x", "y"), "test/mse", margin=0.06).verdicts(table)[0].met is False
    assert BeatsBy("moe", ("x", "y"), "test/mse", ratio=1.25).verdicts(table)[0].met is True  # 0.20 <= 0.25 / 1.25
    (r,) = BeatsBy("moe", ("x", "y"), "test/mse", ratio=1.3).verdicts(table)
    assert r.met is False and r.target == "moe test/mse ≤ best of x, y / 1.3" and r.ours.endswith("0.80× best")
    worse = _table([*recs, _rec("z", "A", 0.1, metric="test/mse")], higher=())
    assert BeatsBy("moe", ("x", "z"), "test/mse").verdicts(worse)[0].met is False  # margin 0: not worse than z


def test_beats_by_a_ratio_and_when_it_cannot_judge():
    recs = [_rec("sphere", "S", 0.3), _rec("sphere", "S", 0.4, seed=1), _rec("moe", "S", 0.2)]
    table = _table(recs)
    (v,) = BeatsBy("sphere", ("moe",), "test/acc", ratio=1.5).verdicts(table)
    assert v.met is True and v.target == "sphere test/acc ≥ 1.5× moe" and v.ours.endswith("1.75× best")
    assert BeatsBy("sphere", ("moe",), "test/acc", ratio=1.8).verdicts(table)[0].met is False
    exact = _table([_rec("sphere", "S", 0.3), _rec("moe", "S", 0.2)])  # 0.2 * 1.5 = 0.30000000000000004
    assert BeatsBy("sphere", ("moe",), "test/acc", ratio=1.5).verdicts(exact)[0].met is True
    ratio = BeatsBy("sphere", ("moe",), "test/acc", ratio=1.5)
    (z,) = ratio.verdicts(_table([_rec("sphere", "S", 0.3), _rec("moe", "S", 0.0)]))
    assert z.met is True and z.ours.endswith("best is 0: ours > 0 counts")
    assert ratio.verdicts(_table([_rec("sphere", "S", 0.0), _rec("moe", "S", 0.0)]))[0].met is False  # no gain
    (neg,) = ratio.verdicts(_table([_rec("sphere", "S", 0.3), _rec("moe", "S", -0.5)]))
    assert neg.met is None and "ratio undefined" in neg.ours
    (empty,) = BeatsBy("sphere", ("moe",), "test/acc", ratio=1.5).verdicts(_table([_rec("moe", "S", 0.2)]))
    assert empty.met is None and empty.ours == "no cells with runs yet"
    assert targets_section([BeatsBy("sphere", ("moe",), "test/acc", label="claim")], _table([]))[-2] == (
        "| claim | test/acc | no cells with runs yet | not yet judged |"
    )
    with pytest.raises(ConfigError, match="BeatsBy"):
        BeatsBy("sphere", ("moe",), "test/acc", margin=0.1, ratio=1.5)


def test_numbers_keep_their_meaningful_decimals_and_a_std_follows_its_mean():
    from zoo.leaderboard.numbers import fmt_number
    from zoo.leaderboard.render import mean_std

    assert [fmt_number(v) for v in (0.12345, 28.8580, 683.24)] == ["0.123", "28.86", "683.2"]
    assert mean_std([600.0, 700.0, 750.0]) == "683.3 ± 76.4 (n=3)"  # not "± 76.38"
    assert mean_std([0.5, 0.7]) == "0.600 ± 0.141 (n=2)"


def test_within_of_cell_compares_a_cell_with_another_rows_cell():
    recs = [_rec("unified", "IR+RGB", 0.30, metric="test/ir/AP"), _rec("single", "IR", 0.315, metric="test/ir/AP")]
    table = _table(recs, higher=("test/ir/AP",))
    (v,) = WithinOfCell("unified", "IR+RGB", "single", "IR", "test/ir/AP", margin=0.01).verdicts(table)
    assert v.met is False and v.target == "unified test/ir/AP ≥ single (IR) − 0.01" and v.where == "IR+RGB"
    assert WithinOfCell("unified", "IR+RGB", "single", "IR", "test/ir/AP", margin=0.02).verdicts(table)[0].met
    lower = _table([_rec("u", "A", 0.51, metric="test/mse"), _rec("s", "B", 0.50, metric="test/mse")], higher=())
    assert WithinOfCell("u", "A", "s", "B", "test/mse", margin=0.01).verdicts(lower)[0].met is True  # 0.51 <= 0.51
    assert WithinOfCell("u", "A", "s", "C", "test/mse").verdicts(lower)[0].met is None
