"""MAMMOTH's declared targets (tasks/mil/spec.py): the ">= 70 % of (aggregator, dataset) cells" claim as
``ImprovesOnFraction`` data, judged on records; on the committed records it gives the counts the hand-written page
printed before (6 of 15 for accuracy, 10 of 15 for AUC)."""

from __future__ import annotations

from zoo_testing import make_record

from zoo.leaderboard.record import read_records
from zoo.leaderboard.results_table import ResultTable
from zoo.leaderboard.targets import ImprovesOnFraction
from zoo.registry import get_task
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
    # MUSK1: MAMMOTH better for every aggregator; Elephant: better for 3 of 5 (paired by (seed, fold))
    for i, agg in enumerate(AGGREGATORS):
        for fold in range(2):
            records += [_record(method_name(agg, "linear"), "MUSK1", 0, fold, 0.5)]
            records += [_record(method_name(agg, "mammoth"), "MUSK1", 0, fold, 0.6)]
            records += [_record(method_name(agg, "linear"), "Elephant", 0, fold, 0.5)]
            records += [_record(method_name(agg, "mammoth"), "Elephant", 0, fold, 0.6 if i < 3 else 0.4)]
    table = ResultTable(spec.benchmark, records, spec.higher_is_better)
    (acc,) = spec.targets[0].verdicts(table)
    assert acc.ours == "8 of 10 cells (80%)" and acc.met is True
    (auc,) = spec.targets[1].verdicts(table)
    assert auc.met is None  # no AUC in these records: not judged


def test_committed_records_give_the_counts_of_the_old_page():
    spec = get_task("mammoth")
    records = read_records("mammoth")
    if not records:
        return
    table = ResultTable(spec.benchmark, records, spec.higher_is_better)
    verdicts = [v for t in spec.targets for v in t.verdicts(table)]
    assert [(v.ours, v.met) for v in verdicts] == [("6 of 15 cells (40%)", False), ("10 of 15 cells (67%)", False)]
