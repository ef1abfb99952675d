"""DroneDINO's own page sections (declared in ``spec.TABLES``): dynamic-expert load per task (over-activation), and
the step time and learning check of ``zoo bench dronedino-step`` from its records.

Each MoE record's ``extra.expert_load_per_task`` holds, per task and MoE layer, the share of the test tokens'
top-k slots that went to each dynamic expert. Over-activation (the paper's claim): in a plain top-k MoE trained
on an imbalanced mix, the dominant task's experts take the minor task's tokens too, so the tasks' load vectors
look alike; DroneDINO's task experts and task-recognition loss should keep them apart. The spec then shows the
detection figures each run draws (``extra.detection_figures``), copied into ``plots/`` by
``zoo.leaderboard.example_plots``.

``python -m zoo_tasks.detection.tables`` draws the same loads into ``leaderboard/results/dronedino/expert_load.png``
(one panel per mix and MoE method, IR and RGB bars per layer and expert), which the page then shows. Table rows
and figure panels whose runs the page marks ° (not written by the current code or settings) carry the mark too.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import numpy as np

from zoo.bench.claims import has_provenance, provenance_line, read_records
from zoo.leaderboard.numbers import fmt_value
from zoo.utils.figures import pyplot, save_figure

LOAD_FIGURE = "expert_load.png"
TASK_COLOURS = {"ir": "tab:red", "rgb": "tab:blue"}
NOT_CURRENT = " °"


def _not_current(records, current: Callable) -> set:
    """(dataset, method) groups with a load record that ``current`` rejects (the page's test for leaving a record
    unmarked): what the page marks °."""
    return {(r.dataset, r.method) for r in records if (r.extra or {}).get("expert_load_per_task") and not current(r)}


def _per_task(records) -> dict:
    """(dataset, method) -> task -> layer -> list of load vectors (one per run)."""
    out = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    for r in records:
        loads = (r.extra or {}).get("expert_load_per_task") or {}
        for task, layers in loads.items():
            for layer, load in layers.items():
                out[(r.dataset, r.method)][task][layer].append(np.asarray(load, dtype=float))
    return out


def expert_load(page) -> list[str]:
    """Per (dataset, method, task) the max/mean dynamic-expert load (mean over layers and runs), and per (dataset,
    method) the L1 distance between the IR and RGB load vectors (0 = the tasks share experts alike). Rows of records
    the page does not count current (``page.current``) carry ``°``."""
    records, current = page.records, page.current
    data = _per_task(records)
    if not data:
        return []
    lines = ["## Dynamic-expert load per task (test split)", ""]
    if (page.results / LOAD_FIGURE).exists():
        lines += [f"![dynamic-expert load per task](results/dronedino/{LOAD_FIGURE})", ""]
    lines += [
        "| dataset | method | task | runs | max/mean load ↓ | load of encoder.0 experts |",
        "|---|---|---|---|---|---|",
    ]
    distance = []
    stale = _not_current(records, current)
    for (dataset, method), tasks in sorted(data.items()):
        mark = NOT_CURRENT if (dataset, method) in stale else ""
        for task, layers in sorted(tasks.items()):
            mean_loads = {name: np.mean(v, axis=0) for name, v in layers.items()}
            peak = np.mean([load.max() * len(load) for load in mean_loads.values()])
            first = mean_loads.get("encoder.0", next(iter(mean_loads.values())))
            runs = max(len(v) for v in layers.values())
            shares = " / ".join(f"{v:.2f}" for v in first)
            lines.append(f"| {dataset} | {method}{mark} | {task} | {runs} | {fmt_value(float(peak))} | {shares} |")
        if "ir" in tasks and "rgb" in tasks:
            common = set(tasks["ir"]) & set(tasks["rgb"])
            d = np.mean([np.abs(np.mean(tasks["ir"][k], 0) - np.mean(tasks["rgb"][k], 0)).sum() for k in common])
            distance.append(
                f"- {dataset}, {method}{mark}: IR-RGB load distance (L1, mean over layers) {fmt_value(float(d))}"
            )
    if stale:
        distance.append(
            "- ° rows come from runs the tables above mark ° (not written by the current code or settings); the "
            "figure's panels of those runs say so in their titles."
        )
    return [*lines, "", *distance]


STEP_BENCH = "dronedino-step"
MODELS = {"none": "dense DINO", "topk": "top-k MoE DINO", "hetero": "DroneDINO"}  # the bench's --moe
SETTING_KEYS = ("moe", "tasks", "size", "batch", "max_images", "steps", "threads")


def _newest_per_setting(leaderboard: Path) -> list[tuple[Path, dict]]:
    """The newest ``zoo bench dronedino-step`` record with provenance of each distinct setting, by setting."""
    newest: dict[tuple, tuple[Path, dict]] = {}
    for path, record in read_records(STEP_BENCH, leaderboard):
        if not has_provenance(record):
            continue
        key = tuple(record["settings"].get(k) for k in SETTING_KEYS)
        if key not in newest or record.get("date", "") > newest[key][1].get("date", ""):
            newest[key] = (path, record)
    order = sorted(newest, key=lambda k: (-(k[2] or 0), str(k[1]), str(k[0])))  # largest images first
    return [newest[k] for k in order]


def _joined(pairs: list) -> str:
    return ", ".join(f"{loss:g}" for _, loss in pairs)


def _losses(pairs: list) -> str:
    """A record's ``[(task, loss), ...]`` as the page shows them: a short fit's all, else first 4 → last 4."""
    return _joined(pairs) if len(pairs) <= 8 else f"{_joined(pairs[:4])} → {_joined(pairs[-4:])}"


def step_time(page) -> list[str]:
    """Seconds per DroneDINO training step and inference batch, and the first and last losses of short fits on the
    real images, from the newest ``zoo bench dronedino-step`` record of each setting, each with its provenance."""
    found = _newest_per_setting(page.leaderboard)
    if not found:
        return []
    lines = [
        f"## Step time and a learning check (`zoo bench {STEP_BENCH}`)",
        "",
        "Training steps of the real model on real images (forward, backward, AdamW, gradient clipping), in one "
        "process; inference = one `predict` batch after training. Loss: DINO's total of each step.",
        "",
        "| model | tasks | size | batch | images per task | threads | params (M) | s / step (median; each) "
        "| inference s / batch | loss (each step; a longer fit: first 4 → last 4) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    sources = []
    for n, (path, record) in enumerate(found, 1):
        s, steps = record["settings"], record["step_s"]
        each = ", ".join(f"{t:.2f}" for t in steps[:5]) + (", …" if len(steps) > 5 else "")
        model, images = MODELS.get(s["moe"], s["moe"]), s.get("max_images") or "all"
        lines.append(
            f"| {model} [{n}] | {s['tasks']} | {s['size']} | {s['batch']} | {images} | "
            f"{s['threads']} | {record['params_m']:.1f} | {statistics.median(steps):.2f} ({each}) | "
            f"{record['inference_s']:.2f} | {_losses(record['losses'])} |"
        )
        sources.append(f"{n}. {provenance_line(path, record, page.leaderboard)}")
    return [*lines, "", *sources, ""]


def plot_expert_load(records, path, current: Callable) -> None:
    """One panel per (mix, MoE method): each dynamic expert's share of each task's test tokens (mean over runs),
    experts grouped by layer. Over-activation shows as the minority task's bars piling onto the experts the
    dominant task uses. Panels of runs ``current`` rejects (the page's test) are titled °."""
    data = _per_task(records)
    if not data:
        raise ValueError("no record holds extra.expert_load_per_task")
    stale = _not_current(records, current)
    plt = pyplot()
    panels = sorted(data)
    fig, axes = plt.subplots(len(panels), 1, figsize=(10, 2.6 * len(panels)), squeeze=False)
    for ax, (dataset, method) in zip(axes[:, 0], panels):
        tasks = data[(dataset, method)]
        shared = set.intersection(*(set(v) for v in tasks.values()))
        layers = sorted(shared, key=lambda name: (not name.startswith("encoder"), name))  # encoder first
        width = 0.8 / len(tasks)
        for t, (task, by_layer) in enumerate(sorted(tasks.items())):
            loads = np.concatenate([np.mean(by_layer[layer], axis=0) for layer in layers])
            ax.bar(
                np.arange(len(loads)) + (t - (len(tasks) - 1) / 2) * width,
                loads,
                width,
                label=task,
                color=TASK_COLOURS.get(task),
            )
        experts = len(loads) // len(layers)
        ax.set_xticks(np.arange(len(layers) * experts))
        ax.set_xticklabels(
            [f"{layer}\n{e}" if e == 0 else str(e) for layer in layers for e in range(experts)], fontsize=7
        )
        for k in range(1, len(layers)):
            ax.axvline(k * experts - 0.5, color="grey", lw=0.5)
        mark = " ° (not the current code or settings)" if (dataset, method) in stale else ""
        ax.set(title=f"{method}, {dataset}{mark}", ylabel="share of test tokens", ylim=(0, 1))
        ax.legend(fontsize=7, loc="upper right")
    save_figure(fig, path, dpi=100)


if __name__ == "__main__":
    from zoo.leaderboard import read_records
    from zoo.leaderboard.tables import Page
    from zoo_tasks.detection.spec import DRONEDINO

    page = Page.of(DRONEDINO, read_records("dronedino"))
    plot_expert_load(page.records, page.results / LOAD_FIGURE, page.current)
    print(page.results / LOAD_FIGURE)
