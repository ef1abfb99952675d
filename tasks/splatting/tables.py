"""MoE-GS's own leaderboard tables: the gate-aware pruning curve and the distillation, both from the records;
the example renders and expert-weight maps are copied from the ``moe_gs`` run into ``plots/`` by hand
(``zoo.leaderboard.example_plots``), as WestWorld's example rollouts are.

Everything else (metrics, targets, routing summary) is drawn by the generic renderer from the spec.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from zoo.leaderboard.example_plots import example_plot_lines
from zoo.leaderboard.record import results_dir
from zoo.leaderboard.render import finite_mean, fmt_value


def moe_gs_tables(records, results: Path | None = None) -> str:
    """Markdown: blend test PSNR by the fraction of Gaussians each expert keeps (``moe_gs`` rows,
    ``extra.pruning_psnr_by_kept_fraction``; 100 % is the row's ``test/psnr``), the distilled expert before and
    after against its teacher, and the example figures under ``results/plots``."""
    results = results_dir("moe_gs") if results is None else Path(results)
    lines = []
    curve, full = defaultdict(list), []
    for r in records:
        if r.method == "moe_gs" and "test/psnr" in r.metrics:
            full.append(r.metrics["test/psnr"])
            for fraction, psnr in ((r.extra or {}).get("pruning_psnr_by_kept_fraction") or {}).items():
                curve[float(fraction)].append(psnr)
    if curve:
        kept = sorted(curve, reverse=True)
        lines += ["## Gate-aware pruning: test PSNR of the blend by the Gaussians each expert keeps", ""]
        lines += [
            "| kept | 100 % | " + " | ".join(f"{f * 100:g} %" for f in kept) + " |",
            "|---" * (len(kept) + 2) + "|",
        ]
        cells = [fmt_value(finite_mean(full), 2), *(fmt_value(finite_mean(curve[f]), 2) for f in kept)]
        lines += ["| test/psnr (dB) | " + " | ".join(cells) + " |", ""]
    distilled = [r for r in records if r.method == "distilled" and "test/psnr" in r.metrics]
    if distilled:
        lines += [
            "## Distillation: the mixture's best expert (by validation PSNR) fine-tuned on its blended renders",
            "",
        ]
        lines += ["| student | before | after | teacher (MoE-GS) |", "|---|---|---|---|"]
        by_student = defaultdict(list)
        for r in distilled:
            by_student[(r.extra or {}).get("student", "?")].append(r)
        for student, recs in sorted(by_student.items()):
            cells = [fmt_value(finite_mean([r.metrics.get(k) for r in recs]), 2) for k in ("test/psnr_before",
                     "test/psnr", "test/psnr_teacher")]  # fmt: skip
            lines.append(f"| {student} | " + " | ".join(cells) + " |")
        lines.append("")
    heading = "Example test view (moe_gs run, seed 0): every expert and the blend, and the weights G'_k(u)"
    lines += example_plot_lines("moe_gs", heading, results)
    return "\n".join(lines)
