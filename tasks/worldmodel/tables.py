"""WestWorld's own leaderboard tables and figures: rollout error vs number of pretraining robots, and the system
gate per robot.

Everything else (metrics, targets, routing summary) is drawn by the generic renderer from the spec. The two
figures are drawn from the records alone (``figures/``); example rollouts are copied from a run into ``plots/``
by hand (runs/ is git-ignored), as MAMMOTH's dispatch plots are.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from pathlib import Path

from zoo.leaderboard.example_plots import example_plot_lines
from zoo.leaderboard.render import finite_mean, fmt_value
from zoo.registry import repository_root

SCALING_METHODS = ("westworld", "dense")
RESULTS = "leaderboard/results/westworld"


def _robots(dataset: str) -> int | None:
    if dataset.startswith("scaling: "):
        return int(dataset.split()[1])
    return 12 if dataset.startswith("zero-shot") else None


def westworld_tables(records, results: Path | None = None) -> str:
    """Markdown: zero-shot test/mae by number of pretraining robots (3 / 6 / 12; 12 is the zero-shot row), and the
    mean system-gate weight per robot and expert of WestWorld's zero-shot runs (last block), with their figures
    drawn into ``results`` (default: this checkout's ``leaderboard/results/westworld``)."""
    results = repository_root() / RESULTS if results is None else Path(results)
    mae = defaultdict(list)
    gates = defaultdict(list)
    for r in records:
        n = _robots(r.dataset)
        if n is not None and r.method in SCALING_METHODS and "test/mae" in r.metrics:
            mae[(r.method, n)].append(float(r.metrics["test/mae"]))
        if r.method == "westworld" and r.dataset.startswith("zero-shot"):
            for robot, blocks in ((r.extra or {}).get("system_gate") or {}).items():
                if blocks:
                    gates[robot].append(blocks[sorted(blocks)[-1]])
    figures = _figures(mae, gates, results)
    lines = ["## Scaling: zero-shot test/mae vs pretraining robots", ""]
    lines += ["| method | 3 robots | 6 robots | 12 robots |", "|---|---|---|---|"]
    for m in SCALING_METHODS:
        cells = [fmt_value(finite_mean(mae.get((m, n), []))) for n in (3, 6, 12)]
        lines.append(f"| {m} | " + " | ".join(cells) + " |")
    lines.append("")
    if gates:
        experts = max(len(g) for gs in gates.values() for g in gs)
        lines += ["## System gate per robot (WestWorld, zero-shot runs, last block, mean over seeds)", ""]
        lines += ["| robot | " + " | ".join(f"e{e}" for e in range(experts)) + " |", "|---" * (experts + 1) + "|"]
        for robot in sorted(gates):
            mean = [finite_mean([g[e] for g in gates[robot] if e < len(g)]) for e in range(experts)]
            lines.append(f"| {robot} | " + " | ".join(fmt_value(v, 2) for v in mean) + " |")
        lines.append("")
    lines += [f"![{name}](results/westworld/{rel})" for name, rel in figures] + ([""] if figures else [])
    lines += example_plot_lines("westworld", "Example rollouts (zero-shot robots, WestWorld seed 0)", results)
    return "\n".join(lines)


def _figures(mae: dict, gates: dict, results: Path) -> list[tuple[str, str]]:
    """Draw the scaling curve and the gate heatmap from the records into ``results/figures`` when that folder's
    parent exists (a checkout with this task's records); returns (name, path relative to ``results``)."""
    if not results.is_dir() or not mae:
        return []
    from zoo.utils.figures import pyplot, save_figure
    from zoo_tasks.worldmodel.plots import gate_heatmap

    out = []
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(4.6, 3.2))
    for method in SCALING_METHODS:
        points = sorted((n, v) for (m, n), v in mae.items() if m == method and v)
        if not points:
            continue
        xs = [n for n, _ in points]
        means = [statistics.fmean(v) for _, v in points]
        ses = [statistics.stdev(v) / math.sqrt(len(v)) if len(v) > 1 else 0.0 for _, v in points]
        ax.errorbar(xs, means, yerr=ses, marker="o", capsize=3, label=method)
    ax.set_xscale("log", base=2)
    ax.set_xticks([3, 6, 12], ["3", "6", "12"])
    ax.set_xlabel("pretraining robots")
    ax.set_ylabel("zero-shot test MAE (Walker2d, Hopper)")
    ax.legend()
    save_figure(fig, results / "figures" / "scaling.png")
    out.append(("scaling", "figures/scaling.png"))
    if gates:
        per_robot = {}
        for robot, runs in gates.items():
            width = max(len(g) for g in runs)
            per_robot[robot] = {"last block": [finite_mean([g[e] for g in runs if e < len(g)]) for e in range(width)]}
        gate_heatmap(per_robot, results / "figures" / "system_gate.png")
        out.append(("system gate", "figures/system_gate.png"))
    return out
