"""Extra leaderboard tables for SEER: ours vs the published numbers with the issue's targets, the robustness
table (SEER vs its dense twin under each input corruption) and the replacement / expert-load diagnostics. Run
history and caveats live in ``leaderboard/notes/seer.md``, not here."""

from __future__ import annotations

import math
import statistics
from collections import defaultdict

from zoo.leaderboard.render import finite_mean, fmt_value
from zoo_tasks.timeseries.spec import DATASETS, HORIZONS, PUBLISHED

_CONDITIONS = (("clean", ""), ("missing", "_missing"), ("spike", "_spike"), ("noise", "_noise"))
MOE_LAYER = "net.embedding.moe"  # the name SEERForecaster's steps give its patch mixture's routing


def _mean(records, metric: str) -> float:
    return finite_mean(r.metrics.get(metric) for r in records)


def _fmt(value: float, dagger: bool = False) -> str:
    return fmt_value(value) + (" †" if dagger and not math.isnan(value) else "")


def _cells(records) -> dict[tuple[str, str], list]:
    cells = defaultdict(list)
    for rec in records:
        cells[(rec.dataset, rec.method)].append(rec)
    return cells


def _comparison(cells) -> list[str]:
    lines = [
        "## SEER vs published (MSE / MAE, lookback 96)",
        "",
        "Target of the issue: SEER's MSE ≤ the better of the two published MSEs (iTransformer, PatchTST) on at "
        "least 10 of the 16 ETT cells, compared at the three decimals the papers print (a tie meets it). ✓ = met, "
        "✗ = missed; † = reduced settings (fewer epochs than the paper's 30, see the notes), so a ✗ there says as "
        "much about the budget as about the method.",
        "",
        "| dataset | SEER | dense twin | PatchTST (ours) | iTransformer (pub.) | PatchTST (pub.) | SEER ≤ best pub. |",
        "|---|---|---|---|---|---|---|",
    ]
    met = tried = 0
    for ds in DATASETS:
        for i, h in enumerate(HORIZONS):
            cell = f"{ds}/{h}"
            if not any((cell, m) in cells for m in ("seer", "dense", "patchtst")):
                continue
            row = [cell]
            for method in ("seer", "dense", "patchtst"):
                recs = cells.get((cell, method), [])
                dagger = any(r.reduced for r in recs)
                row.append(f"{_fmt(_mean(recs, 'test/mse'))} / {_fmt(_mean(recs, 'test/mae'), dagger)}")
            pub = [PUBLISHED[name][ds][i] for name in ("iTransformer", "PatchTST")]
            row += [f"{mse:.3f} / {mae:.3f}" for mse, mae in pub]
            seer = _mean(cells.get((cell, "seer"), []), "test/mse")
            verdict = ""
            if not math.isnan(seer):
                ok = round(seer, 3) <= min(mse for mse, _ in pub)  # published values carry 3 decimals
                verdict = "✓" if ok else "✗"
                if ds.startswith("ETT"):
                    tried += 1
                    met += ok
            lines.append("| " + " | ".join(row + [verdict]) + " |")
    lines += ["", f"ETT cells meeting the target: {met} of {tried} run (of 16).", ""]
    return lines


def _robustness(cells, records) -> list[str]:
    described = next((r.extra.get("corruptions") for r in records if r.extra.get("corruptions")), {}) or {}
    lines = [
        "## Robustness: test MSE under corrupted inputs (SEER vs dense twin vs PatchTST)",
        "",
        "Only the lookback window of each test sample is corrupted (normalised scale, seeded: every model sees "
        "the same corrupted inputs): " + "; ".join(f"**{k}**: {v}" for k, v in described.items()) + ".",
        "",
        "| dataset | " + " | ".join(f"{c}: SEER / dense / PatchTST" for c, _ in _CONDITIONS) + " |",
        "|---|" + "---|" * len(_CONDITIONS),
    ]
    wins = {c: [0, 0] for c, _ in _CONDITIONS}
    sums = {c: [[], []] for c, _ in _CONDITIONS}
    for ds in DATASETS:
        for h in HORIZONS:
            cell = f"{ds}/{h}"
            if (cell, "seer") not in cells and (cell, "dense") not in cells:
                continue
            row = [cell]
            for cond, suffix in _CONDITIONS:
                vals = [_mean(cells.get((cell, m), []), f"test/mse{suffix}") for m in ("seer", "dense", "patchtst")]
                row.append(" / ".join(_fmt(v) for v in vals))
                if not (math.isnan(vals[0]) or math.isnan(vals[1])):
                    wins[cond][0] += vals[0] < vals[1]
                    wins[cond][1] += 1
                    sums[cond][0].append(vals[0])
                    sums[cond][1].append(vals[1])
            lines.append("| " + " | ".join(row) + " |")
    lines += ["", "| condition | SEER mean MSE | dense mean MSE | cells where SEER < dense |", "|---|---|---|---|"]
    for cond, _ in _CONDITIONS:
        seer, dense = sums[cond]
        if seer:
            lines.append(
                f"| {cond} | {statistics.fmean(seer):.3f} | {statistics.fmean(dense):.3f} | "
                f"{wins[cond][0]} of {wins[cond][1]} |"
            )
    return lines + [""]


def _expert_load(record) -> tuple[list[float], float | None]:
    """(load per expert, its coefficient of variation) of SEER's patch mixture on the clean test set: from the
    record's routing summary (``routing["test"]["net.embedding.moe"]``), or from ``extra["diagnostics"]`` in
    records written before routing summaries existed."""
    clean = (record.extra.get("diagnostics") or {}).get("clean", {})
    if "expert_load" in clean:
        return clean["expert_load"], clean.get("expert_load_cv")
    layer = (record.routing.get("test") or {}).get(MOE_LAYER) or {}
    load = layer.get("load") or []
    if not load or not sum(load):
        return load, None
    mean = statistics.fmean(load)
    return load, statistics.pstdev(load) / mean


def _diagnostics(cells) -> list[str]:
    lines = [
        "## SEER diagnostics on the test set",
        "",
        "Fraction of patch tokens replaced by the series token under each test condition, and the expert load "
        "of the MoE patch embedding on the clean test set (share of routed patch slots per expert) with its "
        "coefficient of variation. The replacement scorer learns as in the reference code: only kept tokens pass "
        "a gradient to their score, so a replaced token stays replaced (`replacement_gradient: straight_through` "
        "lets every score learn). Every cell uses the reference's ETTh1/96 settings (threshold 0.5, d_model "
        "256, 8 experts, top-2); see the notes for how the reference scripts tune each cell.",
        "",
        "| dataset | replaced (clean / missing / spike / noise) | expert load (clean) | load CV |",
        "|---|---|---|---|",
    ]
    for ds in DATASETS:
        for h in HORIZONS:
            recs = cells.get((f"{ds}/{h}", "seer"), [])
            record = next((r for r in recs if r.extra.get("diagnostics")), None)
            if record is None:
                continue
            diag = record.extra["diagnostics"]
            replaced = " / ".join(
                f"{diag[c]['replaced_fraction']:.2%}" if "replaced_fraction" in diag.get(c, {}) else "—"
                for c, _ in _CONDITIONS
            )
            load_fractions, cv = _expert_load(record)
            load = " ".join(f"{v:.2f}" for v in load_fractions)
            lines.append(f"| {ds}/{h} | {replaced} | {load} | {'' if cv is None else f'{cv:.2f}'} |")
    return lines + [""]


def seer_tables(records) -> str:
    """Markdown appended to ``leaderboard/seer.md`` (``TaskSpec.extra_tables``)."""
    if not records:
        return ""
    cells = _cells(records)
    return "\n".join(_comparison(cells) + _robustness(cells, records) + _diagnostics(cells))
