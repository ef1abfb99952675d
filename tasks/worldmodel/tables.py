"""WestWorld's own page sections and figures (declared in ``spec.TABLES``): the system gate per robot, and the two
figures drawn from the records alone (rollout error vs pretraining robots, the gate heatmap).

The scaling table, metrics, targets and routing summary are declarations the generic renderer draws. Example
rollouts are copied from a run into ``plots/`` by hand (runs/ is git-ignored), as MAMMOTH's dispatch plots are.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict

from zoo.leaderboard.numbers import finite_mean, fmt_value
from zoo_tasks.worldmodel.spec import SCALING, SCALING_METHODS


def _mae(records) -> dict[tuple[str, int], list[float]]:
    """(method, pretraining robots) -> zero-shot test/mae of each run."""
    mae = defaultdict(list)
    for r in records:
        if r.dataset in SCALING and r.method in SCALING_METHODS and "test/mae" in r.metrics:
            mae[(r.method, SCALING[r.dataset])].append(float(r.metrics["test/mae"]))
    return mae


def _gates(records) -> dict[str, list[list[float]]]:
    """Robot -> the last block's system-gate weights of each zero-shot WestWorld run."""
    gates = defaultdict(list)
    for r in records:
        if r.method == "westworld" and r.dataset.startswith("zero-shot"):
            for robot, blocks in ((r.extra or {}).get("system_gate") or {}).items():
                if blocks:
                    gates[robot].append(blocks[sorted(blocks)[-1]])
    return gates


def gate_table(page) -> list[str]:
    """The mean system-gate weight per robot and expert of WestWorld's zero-shot runs (last block)."""
    gates = _gates(page.records)
    if not gates:
        return []
    experts = max(len(g) for gs in gates.values() for g in gs)
    lines = ["## System gate per robot (WestWorld, zero-shot runs, last block, mean over seeds)", ""]
    lines += ["| robot | " + " | ".join(f"e{e}" for e in range(experts)) + " |", "|---" * (experts + 1) + "|"]
    for robot in sorted(gates):
        mean = [finite_mean([g[e] for g in gates[robot] if e < len(g)]) for e in range(experts)]
        lines.append(f"| {robot} | " + " | ".join(fmt_value(v, 2) for v in mean) + " |")
    return lines


def scaling_figure(page, path) -> bool:
    """Zero-shot test MAE (mean ± s.e. over runs) against pretraining robots, one line per method."""
    mae = _mae(page.records)
    if not mae:
        return False
    from zoo.utils.figures import pyplot, save_figure

    fig, ax = pyplot().subplots(figsize=(4.6, 3.2))
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
    save_figure(fig, path)
    return True


def gate_figure(page, path) -> bool:
    """The gate table as a heatmap (``plots.gate_heatmap``)."""
    gates = _gates(page.records)
    if not gates:
        return False
    from zoo_tasks.worldmodel.plots import gate_heatmap

    per_robot = {}
    for robot, runs in gates.items():
        width = max(len(g) for g in runs)
        per_robot[robot] = {"last block": [finite_mean([g[e] for g in runs if e < len(g)]) for e in range(width)]}
    gate_heatmap(per_robot, path)
    return True
