"""DyGMoCE's own page sections and figures (declared in ``spec.TABLES``), drawn from the records' ``extra`` alone:
each expert's learned curvature, whether the routing is unimodal over curvature-ordered experts (the ranking
constraint's claim), and routing against the local topology of the source node (issue 18's diagnostics).

Metrics, targets and the routing summary are the generic renderer's. The fast-attention claim is judged on the
newest ``zoo bench dygmoce --leaderboard`` record at the task's size (``zoo.bench.claims``).
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from zoo.bench.claims import claim, claims_table, newest, no_record, provenance_line
from zoo.leaderboard.numbers import finite_mean, fmt_value

# The fast-attention targets (the paper reports 27.5 % faster and 52.6 % less memory), at the task's size:
# L = 2 x 32 (source + destination first-hop sequences), dim 200 = 4 channels x 50, 2 heads, forward + backward.
TIME_SAVED, MEMORY_SAVED = 0.25, 0.40
TASK_SIZE = {"dim": 200, "heads": 2, "no_backward": False}
TASK_LENGTH = 64


def _mean_lists(lists: list[list[float]]) -> list[float]:
    width = max((len(v) for v in lists), default=0)
    return [finite_mean([v[i] for v in lists if i < len(v) and v[i] is not None]) for i in range(width)]


def _diagnostics(records) -> tuple[int, dict, dict, dict, dict, dict]:
    """(DyGMoCE runs with diagnostics, then per layer: curvatures, unimodal fractions, routing by curvature rank,
    Spearman's ρ, expected curvature by clustering quartile), one entry per run."""
    runs = [r for r in records if r.method == "dygmoce" and (r.extra or {}).get("curvatures")]
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
    return len(runs), curv, unimodal, profile, rho, quartiles


def curvature_experts(page) -> list[str]:
    """The DyGMoCE runs' diagnostics per layer (means over runs)."""
    runs, curv, unimodal, profile, rho, quartiles = _diagnostics(page.records)
    if not runs:
        return []
    lines = [
        f"## Curvature experts (DyGMoCE, test split, mean over {runs} run(s))",
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
    return lines


def fast_attention(page) -> list[str]:
    """The fast-attention claims, judged on the benchmark records of the page's leaderboard."""
    return fast_attention_lines(page.leaderboard)


def _task_sized(record: dict) -> bool:
    """A ``zoo bench dygmoce`` record that measured the task's attention (``TASK_SIZE``, L = ``TASK_LENGTH``)."""
    settings = record.get("settings", {})
    size = all(settings.get(k) == v for k, v in TASK_SIZE.items())
    return size and TASK_LENGTH in settings.get("lengths", []) and bool(record.get("measurements"))


def _pairs(record: dict) -> list[tuple[dict, dict]]:
    """(plain, fast) measurements of one repeat at one curvature, L = ``TASK_LENGTH``: they ran side by side."""
    by_key: dict[tuple, dict] = defaultdict(dict)
    for m in record["measurements"]:
        if m["length"] == TASK_LENGTH:
            by_key[(m["curvature"], m["repeat"])][m["impl"]] = m
    return [(ms["plain"], ms["fast"]) for _, ms in sorted(by_key.items()) if {"plain", "fast"} <= set(ms)]


def fast_attention_lines(leaderboard: Path | None = None) -> list[str]:
    """The fast-attention claims (time and peak memory saved against the plain path) judged on the newest
    task-sized ``zoo bench dygmoce`` record, its per-curvature medians and its provenance; without such a record
    the claims say "no benchmark record"."""
    targets = (
        f"fast attention saves ≥ {TIME_SAVED:.0%} of the plain path's time",
        f"fast attention saves ≥ {MEMORY_SAVED:.0%} of the plain path's peak memory",
    )
    where = f"one curvature expert, L {TASK_LENGTH}, dim 200, 2 heads, forward + backward"
    lines = ["## Fast Riemannian attention (`zoo bench dygmoce`)", ""]
    found = newest("dygmoce", _task_sized, leaderboard)
    if found is None:
        return [*lines, *claims_table([no_record(t, where) for t in targets]), ""]
    path, record = found
    pairs = _pairs(record)
    rows = [r for r in record.get("rows", []) if r["length"] == TASK_LENGTH]
    lines += ["| κ | plain s | fast s | time saved | plain peak MB | fast peak MB | memory saved |"]
    lines += ["|---|---|---|---|---|---|---|"]
    for r in rows:
        mem = "—" if r.get("memory_saving") is None else f"{r['memory_saving']:.1%}"
        lines.append(
            f"| {r['curvature']:+g} | {r['plain_s']:.3f} | {r['fast_s']:.3f} | {r['time_saving']:.1%} | "
            f"{r['plain_peak_mb']:.0f} | {r['fast_peak_mb']:.0f} | {mem} |"
        )
    st = record["settings"]
    where += f", batch {st['batch']}, κ {' / '.join(f'{c:+g}' for c in st['curvatures'])}, {st['threads']} thread(s)"
    time_gains = [1 - f["seconds"] / p["seconds"] - TIME_SAVED for p, f in pairs]
    memory_gains = [1 - f["peak_mb"] / p["peak_mb"] - MEMORY_SAVED for p, f in pairs if p["peak_mb"] > 0]
    saved = [finite_mean([r.get(k) for r in rows if r.get(k) is not None]) for k in ("time_saving", "memory_saving")]
    verdicts = [
        claim(t, where, f"{fmt_value(100 * s, 1)} % saved", gains, percent=True)
        for t, s, gains in zip(targets, saved, (time_gains, memory_gains))
    ]
    lines += ["", "Medians per curvature over the record's repeats; peak = rise of the peak RSS of each "
              "measurement's own process.", ""]  # fmt: skip
    return [*lines, *claims_table(verdicts), "", provenance_line(path, record, leaderboard), ""]


def _list(values: list[float], digits: int = 2) -> str:
    return "[" + ", ".join(fmt_value(v, digits) for v in values) + "]" if values else "—"


def rank_figure(page, path) -> bool:
    """The mean routing weight per curvature rank: bars, one panel per layer."""
    profile = _diagnostics(page.records)[3]
    if not profile:
        return False
    from zoo.utils.figures import pyplot, save_figure

    layers = sorted(profile)
    fig, axes = pyplot().subplots(1, len(layers), figsize=(2.4 * len(layers), 2.6), sharey=True, squeeze=False)
    for ax, layer in zip(axes[0], layers):
        mean = _mean_lists(profile[layer])
        ax.bar(range(len(mean)), mean)
        ax.set_xticks(range(len(mean)))
        ax.set_xlabel("expert, by learned κ")
        ax.set_title(layer, fontsize=9)
    axes[0][0].set_ylabel("mean routing weight")
    save_figure(fig, path)
    return True


def clustering_figure(page, path) -> bool:
    """The expected curvature per clustering quartile, one line per layer."""
    quartiles = _diagnostics(page.records)[5]
    if not quartiles:
        return False
    from zoo.utils.figures import pyplot, save_figure

    fig, ax = pyplot().subplots(figsize=(4.4, 3.0))
    for layer in sorted(quartiles):
        ax.plot(range(1, 5), _mean_lists(quartiles[layer]), marker="o", label=layer)
    ax.set_xticks(range(1, 5))
    ax.set_xlabel("clustering-coefficient quartile of the recent neighbourhood")
    ax.set_ylabel("expected curvature Σ p κ")
    ax.legend(fontsize=7)
    save_figure(fig, path)
    return True
