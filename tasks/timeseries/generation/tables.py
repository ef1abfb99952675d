"""TimeMoDE's own page section (declared in ``spec.TABLES``): in-domain MDD per domain, TimeMoDE vs its dense twin,
and the share of domains where TimeMoDE is at or below it (the issue's >= 75 % target)."""

from __future__ import annotations

from zoo.leaderboard.compare import BETTER, TIE, TOO_FEW, WORSE, compare_cells
from zoo.leaderboard.numbers import fmt_value
from zoo.leaderboard.targets import NOT_WORSE
from zoo_tasks.timeseries.generation.spec import PRETRAIN

SHARE = 0.75
MARKS = {BETTER: "✓", TIE: "=", WORSE: "✗", TOO_FEW: "n<3"}


def per_domain(page) -> list[str]:
    """One row per dataset: each pre-training domain's TimeMoDE / dense MDD with the paired outcome, then the
    share judged against ``SHARE``."""
    if not page.records:
        return []
    lines = [
        "## In-domain MDD per domain (TimeMoDE vs dense twin)",
        "",
        f"Target: TimeMoDE at or below the dense twin on >= {SHARE:.0%} of the pre-training domains. Each cell: "
        "TimeMoDE / dense twin (mean over seeds), then the outcome of the paired comparison by seed "
        '(`zoo.leaderboard.compare`: ✓ better, = tie, ✗ worse, n<3 too few seed pairs); a domain counts as "at or '
        'below" only when shown better (a tie is not shown), and a domain with too few pairs is not counted.',
        "",
        "| dataset | " + " | ".join(PRETRAIN) + " | at or below |",
        "|---|" + "---|" * (len(PRETRAIN) + 1),
    ]
    table = page.table
    for ds in table.datasets:
        cells, outcomes = [], []
        for domain in PRETRAIN:
            metric = f"test/{domain}_mdd"
            ours, base = (table.mean(m, ds, metric) for m in ("timemode", "dense"))
            if ours != ours or base != base:  # NaN: not run
                cells.append("—")
                continue
            outcome = compare_cells(table, metric, ("timemode", ds), ("dense", ds)).outcome
            outcomes.append(outcome)
            cells.append(f"{fmt_value(ours)} / {fmt_value(base)} {MARKS[outcome]}")
        if outcomes:
            met = sum(o in NOT_WORSE for o in outcomes)
            open_ = outcomes.count(TOO_FEW) + len(PRETRAIN) - len(outcomes)
            needed = SHARE * len(PRETRAIN)
            verdict = "met" if met >= needed else ("not met" if met + open_ < needed else "not yet judged")
            lines.append(f"| {ds} | " + " | ".join(cells) + f" | {met}/{len(PRETRAIN)}: {verdict} |")
    return lines
