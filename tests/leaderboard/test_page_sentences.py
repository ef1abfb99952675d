"""The comparisons task pages write in their own tables (TimeMoDE per domain, MAMMOTH's Δ columns and its
package check) use the pages' one rule: a ✓ only for "better", ties and too few seeds said as such."""

from __future__ import annotations

from zoo_testing import make_record

from zoo.leaderboard.draw import draw_tables
from zoo_tasks.mil.spec import MAMMOTH
from zoo_tasks.timeseries.generation.spec import PRETRAIN, TIMEMODE


def _timemode(method, seed, mdd):
    metrics = {f"test/{domain}_mdd": mdd[i] for i, domain in enumerate(PRETRAIN)}
    return make_record("timemode", method, "corpus/24", metrics, seed=seed)


def test_timemode_per_domain_marks_better_tie_and_worse_and_counts_at_or_below_by_the_rule():
    ours = [[0.10 + 0.001 * s] * len(PRETRAIN) for s in range(3)]
    ours[0][1], ours[1][1], ours[2][1] = 0.20, 0.21, 0.19  # nn5: the dense twin's own values, a tie
    ours[0][2], ours[1][2], ours[2][2] = 0.50, 0.51, 0.52  # taxi: worse
    records = [_timemode("timemode", s, ours[s]) for s in range(3)]
    records += [_timemode("dense", s, [0.20, 0.21, 0.19][s : s + 1] * len(PRETRAIN)) for s in range(3)]
    page = draw_tables(TIMEMODE, records)
    row = next(line for line in page.splitlines() if line.startswith("| corpus/24 |"))
    cells = row.split(" | ")
    assert cells[1] == "0.101 / 0.200 ✓" and cells[2] == "0.200 / 0.200 =" and cells[3] == "0.510 / 0.200 ✗"
    assert row.endswith(f"| {len(PRETRAIN) - 2}/{len(PRETRAIN)}: met |")  # "at or below": shown better only
    one_seed = draw_tables(TIMEMODE, records[:1] + records[3:4])
    assert "n<3" in one_seed and "✓" not in one_seed.split("| corpus/24 |")[1] and "not yet judged" in one_seed


def test_mammoth_delta_columns_and_the_package_check_use_the_rule():
    def runs(method, values, metric="test/acc"):
        return [make_record("mammoth", method, "MUSK1", {metric: v}, seed=0, fold=f) for f, v in enumerate(values)]

    records = runs("ABMIL", [0.80, 0.81, 0.79]) + runs("ABMIL+MAMMOTH", [0.90, 0.91, 0.89])  # +0.1 every fold
    records += runs("ABMIL+mammoth-moe", [0.91, 0.88, 0.90])  # ours - package: -0.01, +0.03, -0.01: a tie
    page = draw_tables(MAMMOTH, records)
    assert "| +0.100 ✓ |" in page
    assert "| MUSK1 | ABMIL | 3 | +0.0033 [-0.0540, +0.0607] | tie = |" in page
    short = draw_tables(MAMMOTH, records[:2] + records[3:5])
    assert "| +0.100 (n<3) |" in short and "✓" not in short.split("### MUSK1")[1].split("\n\n")[1]
