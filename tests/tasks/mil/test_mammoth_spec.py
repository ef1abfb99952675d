"""MAMMOTH's declared targets (tasks/mil/spec.py): the ">= 70 % of (aggregator, dataset) cells" claim as
``ImprovesOnFraction`` data, judged on records; on the committed records its counts equal a count made by hand from
the record files, and the committed page shows them."""

from __future__ import annotations

import statistics

import pytest
from zoo_testing import make_record

from zoo.leaderboard.record import read_records
from zoo.leaderboard.results_table import ResultTable
from zoo.leaderboard.targets import ImprovesOnFraction
from zoo.registry import get_task, repository_root
from zoo_tasks.mil.spec import AGGREGATORS, method_name


def _record(method: str, dataset: str, seed: int, fold: int, acc: float):
    return make_record("mammoth", method, dataset, {"test/acc": acc}, seed=seed, fold=fold)


def test_targets_pair_each_aggregator_with_and_without_mammoth():
    spec = get_task("mammoth")
    assert [t.metric for t in spec.targets] == ["test/acc", "test/auc"]
    for target in spec.targets:
        assert isinstance(target, ImprovesOnFraction) and target.fraction == 0.7
        assert target.pairs == tuple((method_name(a, "mammoth"), method_name(a, "linear")) for a in AGGREGATORS)


def test_target_counts_cells_where_the_paired_mean_improves():
    spec = get_task("mammoth")
    records = []
    # MUSK1: MAMMOTH better for every aggregator; Elephant: better for 3 of 5 (paired by (seed, fold), 3 folds)
    for i, agg in enumerate(AGGREGATORS):
        for fold in range(3):
            records += [_record(method_name(agg, "linear"), "MUSK1", 0, fold, 0.5)]
            records += [_record(method_name(agg, "mammoth"), "MUSK1", 0, fold, 0.6)]
            records += [_record(method_name(agg, "linear"), "Elephant", 0, fold, 0.5)]
            records += [_record(method_name(agg, "mammoth"), "Elephant", 0, fold, 0.6 if i < 3 else 0.4)]
    table = ResultTable(spec.benchmark, records, spec.higher_is_better)
    acc, *cells = spec.targets[0].verdicts(table)
    assert acc.ours == "8 of 10 cells better (80%)" and acc.met is True and len(cells) == 10
    assert acc.outcome == "8 better, 2 worse"
    (auc,) = spec.targets[1].verdicts(table)
    assert auc.met is None  # no AUC in these records: not judged


def _cells_improved_by_hand(records, metric: str) -> tuple[int, int]:
    """The claim counted directly from the record files, without ResultTable or zoo.leaderboard.compare: per
    (aggregator, dataset) cell, MAMMOTH minus the linear layer over the (seed, fold) runs both variants have,
    better when scipy's paired t-test rejects "no difference" at 5 % with a positive mean."""
    from scipy.stats import ttest_rel

    by_key: dict[tuple, float] = {}
    for r in records:
        if metric in r.metrics:
            by_key[(r.method, r.dataset, r.seed, r.fold)] = r.metrics[metric]
    won = total = 0
    for dataset in sorted({r.dataset for r in records}):
        for agg in AGGREGATORS:
            ours, base = method_name(agg, "mammoth"), method_name(agg, "linear")
            runs_of = {m: {k[2:] for k in by_key if k[:2] == (m, dataset)} for m in (ours, base)}
            runs = runs_of[ours] & runs_of[base]
            if runs:
                total += 1
                a, b = ([by_key[(m, dataset, *k)] for k in sorted(runs)] for m in (ours, base))
                won += bool(ttest_rel(a, b).pvalue < 0.05) and statistics.fmean(a) > statistics.fmean(b)
    return won, total


def test_committed_records_and_page_agree_with_a_count_by_hand():
    """On the committed records, each target's "N of M cells better" equals the count made by hand, and the committed
    page shows exactly those verdicts (a page left behind by its records fails here)."""
    spec = get_task("mammoth")
    records = read_records("mammoth")
    if not records:
        pytest.skip("no committed MAMMOTH records")
    table = ResultTable(spec.benchmark, records, spec.higher_is_better)
    page = (repository_root() / "leaderboard" / "mammoth.md").read_text()
    for target in spec.targets:
        verdict, *_ = target.verdicts(table)
        won, total = _cells_improved_by_hand(records, target.metric)
        assert total == 15  # 5 aggregators x 3 datasets
        assert verdict.ours == f"{won} of {total} cells better ({won / total:.0%})"
        assert verdict.met is (won / total >= target.fraction)
        claim = "met" if verdict.met else "not met"
        assert f"| {verdict.target} | {verdict.where} | {verdict.ours} | — | — | {verdict.outcome} | {claim} |" in page
