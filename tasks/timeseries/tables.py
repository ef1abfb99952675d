"""SEER's own page sections (declared in ``spec.TABLES``), after the generic per-metric tables and target verdicts:
the robustness layout (test MSE of SEER / dense twin / PatchTST under each input corruption, side by side per cell)
and the patch-replacement / expert-load diagnostics. The targets themselves are data in ``spec.py``; run history and
caveats live in ``leaderboard/notes/seer.md``."""

from __future__ import annotations

import statistics

from zoo.leaderboard.numbers import fmt_value

CONDITIONS = (("clean", ""), ("missing", "_missing"), ("spike", "_spike"), ("noise", "_noise"))
ROBUSTNESS_METHODS = ("seer", "dense", "patchtst")
MOE_LAYER = "net.embedding.moe"  # the name SEERForecaster's steps give its patch mixture's routing


def robustness(page) -> list[str]:
    """Test MSE of SEER / dense / PatchTST under each corruption, per dataset that SEER or its twin ran."""
    table = page.table
    if not table.records:
        return []
    described = next((r.extra.get("corruptions") for r in table.records if r.extra.get("corruptions")), {}) or {}
    lines = [
        "## Robustness: test MSE under corrupted inputs (SEER vs dense twin vs PatchTST)",
        "",
        "Only the lookback window of each test sample is corrupted (normalised scale, seeded: every model sees "
        "the same corrupted inputs): " + "; ".join(f"**{k}**: {v}" for k, v in described.items()) + ". "
        "The averages over cells are judged in the Targets table above.",
        "",
        "| dataset | " + " | ".join(f"{c}: SEER / dense / PatchTST" for c, _ in CONDITIONS) + " |",
        "|---|" + "---|" * len(CONDITIONS),
    ]
    for ds in table.datasets:
        if not (table.records_of("seer", ds) or table.records_of("dense", ds)):
            continue
        row = [ds]
        for _, suffix in CONDITIONS:
            row.append(" / ".join(fmt_value(table.mean(m, ds, f"test/mse{suffix}")) for m in ROBUSTNESS_METHODS))
        lines.append("| " + " | ".join(row) + " |")
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


def diagnostics(page) -> list[str]:
    """Replaced patch fractions per condition and the clean expert load of each dataset's first SEER run."""
    table = page.table
    if not table.records:
        return []
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
    for ds in table.datasets:
        record = next((r for r in table.records_of("seer", ds) if r.extra.get("diagnostics")), None)
        if record is None:
            continue
        diag = record.extra["diagnostics"]
        replaced = " / ".join(
            f"{diag[c]['replaced_fraction']:.2%}" if "replaced_fraction" in diag.get(c, {}) else "—"
            for c, _ in CONDITIONS
        )
        load_fractions, cv = _expert_load(record)
        load = " ".join(f"{v:.2f}" for v in load_fractions)
        lines.append(f"| {ds} | {replaced} | {load} | {'' if cv is None else f'{cv:.2f}'} |")
    return lines + [""]
