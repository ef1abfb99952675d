"""TimeMoDE's own leaderboard figures, after the generic tables and target verdicts: in-domain MDD per domain
(TimeMoDE vs its dense twin, and the share of domains where TimeMoDE is at or below it, the issue's >= 75 %
target) and the expert-specialisation scores (does the expert tell the noise level, or the domain?)."""

from __future__ import annotations

import statistics

from zoo.leaderboard.render import fmt_value
from zoo.leaderboard.results_table import ResultTable
from zoo_tasks.timeseries.generation.spec import PRETRAIN, TIMEMODE

SHARE = 0.75


def _per_domain(table: ResultTable) -> list[str]:
    lines = [
        "## In-domain MDD per domain (TimeMoDE vs dense twin)",
        "",
        f"Target: TimeMoDE at or below the dense twin on >= {SHARE:.0%} of the pre-training domains (mean over seeds).",
        "",
        "| dataset | " + " | ".join(PRETRAIN) + " | share |",
        "|---|" + "---|" * (len(PRETRAIN) + 1),
    ]
    for ds in table.datasets:
        cells, wins, tried = [], 0, 0
        for domain in PRETRAIN:
            ours, base = (table.mean(m, ds, f"test/{domain}_mdd") for m in ("timemode", "dense"))
            if ours != ours or base != base:  # NaN: not run
                cells.append("—")
                continue
            tried += 1
            wins += ours <= base
            cells.append(f"{fmt_value(ours)} / {fmt_value(base)}{' ✓' if ours <= base else ''}")
        if tried:
            verdict = "✓" if wins >= SHARE * len(PRETRAIN) else ("✗" if tried == len(PRETRAIN) else "…")
            lines.append(f"| {ds} | " + " | ".join(cells) + f" | {wins}/{tried} {verdict} |")
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
