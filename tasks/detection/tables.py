"""DroneDINO's own leaderboard table: dynamic-expert load per task (the over-activation measurement).

Each MoE record's ``extra.expert_load_per_task`` holds, per task and MoE layer, the share of the test tokens'
top-k slots that went to each dynamic expert. Over-activation (the paper's claim): in a plain top-k MoE trained
on an imbalanced mix, the dominant task's experts take the minor task's tokens too, so the tasks' load vectors
look alike; DroneDINO's task experts and task-recognition loss should keep them apart. Then the detection figures
each run draws (``extra.detection_figures``), copied into ``plots/`` with ``zoo.leaderboard.example_plots``.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import numpy as np

from zoo.leaderboard.example_plots import example_plot_lines
from zoo.leaderboard.render import fmt_value


def _per_task(records) -> dict:
    """(dataset, method) -> task -> layer -> list of load vectors (one per run)."""
    out = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    for r in records:
        loads = (r.extra or {}).get("expert_load_per_task") or {}
        for task, layers in loads.items():
            for layer, load in layers.items():
                out[(r.dataset, r.method)][task][layer].append(np.asarray(load, dtype=float))
    return out


def expert_load_tables(records, results: Path | None = None) -> str:
    """Markdown: per (dataset, method, task) the max/mean dynamic-expert load (mean over layers and runs), and
    per (dataset, method) the L1 distance between the IR and RGB load vectors (0 = the tasks share experts alike)."""
    heading = "Detections on the first test image of each task (ground truth green, predictions red with scores)"
    figures = example_plot_lines("dronedino", heading, results)
    data = _per_task(records)
    if not data:
        return "\n".join(figures)
    lines = ["## Dynamic-expert load per task (test split)", ""]
    lines += [
        "| dataset | method | task | runs | max/mean load ↓ | load of encoder.0 experts |",
        "|---|---|---|---|---|---|",
    ]
    distance = []
    for (dataset, method), tasks in sorted(data.items()):
        for task, layers in sorted(tasks.items()):
            mean_loads = {name: np.mean(v, axis=0) for name, v in layers.items()}
            peak = np.mean([load.max() * len(load) for load in mean_loads.values()])
            first = mean_loads.get("encoder.0", next(iter(mean_loads.values())))
            runs = max(len(v) for v in layers.values())
            shares = " / ".join(f"{v:.2f}" for v in first)
            lines.append(f"| {dataset} | {method} | {task} | {runs} | {fmt_value(float(peak))} | {shares} |")
        if "ir" in tasks and "rgb" in tasks:
            common = set(tasks["ir"]) & set(tasks["rgb"])
            d = np.mean([np.abs(np.mean(tasks["ir"][k], 0) - np.mean(tasks["rgb"][k], 0)).sum() for k in common])
            distance.append(f"- {dataset}, {method}: IR-RGB load distance (L1, mean over layers) {fmt_value(float(d))}")
    return "\n".join(lines + ["", *distance, "", *figures]) + "\n"
