"""TimeMoDE's own leaderboard figures, after the generic tables and target verdicts: in-domain MDD per domain
(TimeMoDE vs its dense twin, and the share of domains where TimeMoDE is at or below it, the issue's >= 75 %
target) and the expert-specialisation scores (does the expert tell the noise level, or the domain?)."""

from __future__ import annotations

import statistics

from zoo.leaderboard.compare import BETTER, TIE, TOO_FEW, WORSE, compare_cells
from zoo.leaderboard.render import fmt_value
from zoo.leaderboard.results_table import ResultTable
from zoo.leaderboard.targets import NOT_WORSE
from zoo_tasks.timeseries.generation.spec import PRETRAIN, TIMEMODE

SHARE = 0.75


def _per_domain(table: ResultTable) -> list[str]:
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
    marks = {BETTER: "✓", TIE: "=", WORSE: "✗", TOO_FEW: "n<3"}
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
            cells.append(f"{fmt_value(ours)} / {fmt_value(base)} {marks[outcome]}")
        if outcomes:
            met = sum(o in NOT_WORSE for o in outcomes)
            open_ = outcomes.count(TOO_FEW) + len(PRETRAIN) - len(outcomes)
            needed = SHARE * len(PRETRAIN)
            verdict = "met" if met >= needed else ("not met" if met + open_ < needed else "not yet judged")
            lines.append(f"| {ds} | " + " | ".join(cells) + f" | {met}/{len(PRETRAIN)}: {verdict} |")
    return lines + [""]


def _specialisation(table: ResultTable) -> list[str]:
    lines = [
        "## Expert specialisation (test-time generation)",
        "",
        "Normalised mutual information between the expert a token is routed to and the diffusion-timestep band "
        "(4 bands) or the evaluation case (domain / unseen domain at k), from the routed slots of every mixture "
        "layer while sampling: 0 = experts ignore it, 1 = the expert determines it. Heatmaps: "
        "`expert_load_band.png`, `expert_load_domain.png` in each run folder.",
        "",
        "| method | dataset | NMI(expert; band) | NMI(expert; case) | runs |",
        "|---|---|---|---|---|",
    ]
    for method in ("timemode", "no_prompt", "no_timestep"):
        for ds in table.datasets:
            loads = [r.extra["expert_load"] for r in table.records_of(method, ds) if r.extra.get("expert_load")]
            if loads:
                band = statistics.fmean(x["nmi_expert_band"] for x in loads)
                case = statistics.fmean(x["nmi_expert_group"] for x in loads)
                lines.append(f"| {method} | {ds} | {band:.3f} | {case:.3f} | {len(loads)} |")
    return lines + [""]


def timemode_tables(records) -> str:
    """Markdown appended to ``leaderboard/timemode.md`` (``TaskSpec.extra_tables``)."""
    if not records:
        return ""
    table = ResultTable(TIMEMODE.benchmark, records, TIMEMODE.higher_is_better)
    return "\n".join(_per_domain(table) + _specialisation(table))
