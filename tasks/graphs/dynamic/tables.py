"""DyGMoCE's own leaderboard tables and figures, drawn from the records' ``extra`` alone: each expert's learned
curvature, whether the routing is unimodal over curvature-ordered experts (the ranking constraint's claim), and
routing against the local topology of the source node (issue 18's diagnostics).

Metrics, targets and the routing summary are the generic renderer's.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from zoo.leaderboard.render import finite_mean, fmt_value
from zoo.registry import repository_root

RESULTS = "leaderboard/results/dygmoce"


def _mean_lists(lists: list[list[float]]) -> list[float]:
    width = max((len(v) for v in lists), default=0)
    return [finite_mean([v[i] for v in lists if i < len(v) and v[i] is not None]) for i in range(width)]


def dygmoce_tables(records, results: Path | None = None) -> str:
    """Markdown for the DyGMoCE runs' diagnostics (means over seeds), with two figures drawn into
    ``results/figures`` (default: this checkout's ``leaderboard/results/dygmoce``)."""
    results = repository_root() / RESULTS if results is None else Path(results)
    runs = [r for r in records if r.method == "dygmoce" and (r.extra or {}).get("curvatures")]
    if not runs:
        return ""
    curv, unimodal, profile, rho, quartiles = (defaultdict(list) for _ in range(5))
    for r in runs:
        extra = r.extra
        for layer, values in extra["curvatures"].items():
            curv[layer].append(values)
        for layer, value in (extra.get("unimodal_fraction") or {}).items():
            unimodal[layer].append(value)
        for layer, values in (extra.get("routing_by_curvature_rank") or {}).items():
            profile[layer].append(values)
        for layer, summary in (extra.get("routing_vs_clustering") or {}).items():
            if summary.get("spearman") is not None:
                rho[layer].append(summary["spearman"])
                quartiles[layer].append(summary["expected_curvature_by_clustering_quartile"])
    lines = [
        f"## Curvature experts (DyGMoCE, test split, mean over {len(runs)} run(s))",
        "",
        "Learned curvature per expert in expert order; the share of test tokens whose routing is unimodal over the "
        "experts sorted by curvature; their mean routing weight per curvature rank (most negative first); "
        "Spearman's ρ between the source node's recent-neighbourhood clustering coefficient and its routing's "
        "expected curvature Σ p_e κ_e, and that expected curvature per clustering quartile (low to high).",
        "",
        "| layer | learned κ | unimodal | weight by κ rank | ρ (clustering, E[κ]) | E[κ] by clustering quartile |",
        "|---|---|---|---|---|---|",
    ]
    for layer in sorted(curv):
        lines.append(
            f"| {layer} | {_list(_mean_lists(curv[layer]))} | {fmt_value(finite_mean(unimodal.get(layer, [])))} | "
            f"{_list(_mean_lists(profile.get(layer, [])), 3)} | {fmt_value(finite_mean(rho.get(layer, [])))} | "
            f"{_list(_mean_lists(quartiles.get(layer, [])))} |"
        )
    lines.append("")
    figures = _figures(profile, quartiles, results)
    lines += [f"![{name}](results/dygmoce/{rel})" for name, rel in figures] + ([""] if figures else [])
    return "\n".join(lines)


def _list(values: list[float], digits: int = 2) -> str:
    return "[" + ", ".join(fmt_value(v, digits) for v in values) + "]" if values else "—"


def _figures(profile: dict, quartiles: dict, results: Path) -> list[tuple[str, str]]:
    """The mean routing weight per curvature rank (bars, one panel per layer) and the expected curvature per
    clustering quartile (one line per layer); drawn only into a checkout that holds this task's records."""
    if not results.is_dir() or not profile:
        return []
    from zoo.utils.figures import pyplot, save_figure

    plt = pyplot()
    out = []
    layers = sorted(profile)
    fig, axes = plt.subplots(1, len(layers), figsize=(2.4 * len(layers), 2.6), sharey=True, squeeze=False)
    for ax, layer in zip(axes[0], layers):
        mean = _mean_lists(profile[layer])
        ax.bar(range(len(mean)), mean)
        ax.set_xticks(range(len(mean)))
        ax.set_xlabel("expert, by learned κ")
        ax.set_title(layer, fontsize=9)
    axes[0][0].set_ylabel("mean routing weight")
    save_figure(fig, results / "figures" / "routing_by_curvature_rank.png")
    out.append(("routing by curvature rank", "figures/routing_by_curvature_rank.png"))
    if quartiles:
        fig, ax = plt.subplots(figsize=(4.4, 3.0))
        for layer in sorted(quartiles):
            ax.plot(range(1, 5), _mean_lists(quartiles[layer]), marker="o", label=layer)
        ax.set_xticks(range(1, 5))
        ax.set_xlabel("clustering-coefficient quartile of the recent neighbourhood")
        ax.set_ylabel("expected curvature Σ p κ")
        ax.legend(fontsize=7)
        save_figure(fig, results / "figures" / "curvature_vs_clustering.png")
        out.append(("expected curvature vs clustering", "figures/curvature_vs_clustering.png"))
    return out
