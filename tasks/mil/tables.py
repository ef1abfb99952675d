"""MAMMOTH's own page sections (declared in ``spec.TABLES``): aggregator x {linear, MAMMOTH, mammoth-moe} per dataset,
ours vs the package paired by (repeat, fold), the per-epoch speed benchmark (``package_compare.py``) and the dispatch
plots.

The claim (MAMMOTH beats the linear layer in >= 70 % of cells) is ``TaskSpec.targets`` in ``spec.py``, judged by the
generic renderer; what the columns mean and the run history are in ``leaderboard/notes/mammoth.md``."""

from __future__ import annotations

import json
import statistics
from collections import defaultdict

from zoo.bench.provenance import machine_phrase
from zoo.leaderboard.compare import BETTER, TIE, TOO_FEW, WORSE, paired
from zoo_tasks.mil.spec import AGGREGATORS, DATASETS, PROJECTIONS, REPEATS, method_name

BENCH_FILE = "bench/package_speed.json"  # in the task's results folder


def _fmt(values: list[float]) -> str:
    if not values:
        return "—"
    if len(values) == 1:
        return f"{values[0]:.3f}"
    return f"{statistics.fmean(values):.3f} ± {statistics.stdev(values):.3f}"


_MARK = {BETTER: "✓", TIE: "=", WORSE: "✗", TOO_FEW: "(n<3)"}


def _delta(ours: dict, base: dict) -> str:
    """``+0.035 ✓``: the mean of ours - base over the (seed, fold) runs both hold and the outcome of the pages' rule
    (``zoo.leaderboard.compare``: ✓ better, = tie, ✗ worse by the paired 95 % t-interval); ``—`` without pairs."""
    c = paired(ours, base, higher=True)
    return f"{c.mean:+.3f} {_MARK[c.outcome]}" if c.n else "—"


def grids(page) -> list[str]:
    """Per-dataset grids (Δ paired by (repeat, fold)), then ours vs the package."""
    records = page.records
    by_method = {method_name(a, p): (a, p) for a in AGGREGATORS for p in PROJECTIONS}
    runs: dict[tuple[str, str, str, str], dict] = defaultdict(dict)  # (dataset, agg, proj, metric) -> key -> value
    epoch_s: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for rec in records:
        if rec.method not in by_method:
            continue
        agg, proj = by_method[rec.method]
        for metric in ("test/acc", "test/auc"):
            if metric in rec.metrics:
                runs[(rec.dataset, agg, proj, metric)][(rec.seed, rec.fold)] = rec.metrics[metric]
        if rec.extra.get("train_epoch_s"):
            epoch_s[(rec.dataset, agg, proj)].append(rec.extra["train_epoch_s"])

    planned = len(AGGREGATORS) * len(PROJECTIONS) * len(DATASETS) * len(REPEATS) * 10
    recorded = sum(rec.method in by_method for rec in records)
    lines = [
        "## MAMMOTH vs the linear layer, per aggregator",
        "",
        f"Coverage: {recorded} of the {planned} planned runs ({len(REPEATS)} repeats x 10 folds per cell) are "
        "recorded (what n and the s/epoch column mean: see the notes).",
        "",
    ]
    metrics = ("test/acc", "test/auc")
    pkg_diffs = []
    for dataset in DATASETS:
        if not any(k[0] == dataset for k in runs):
            continue
        lines += [
            f"### {dataset} (mean ± std over repeats x folds; Δ = MAMMOTH - linear, paired: ✓ better, = tie, ✗ worse)",
            "",
            "| aggregator | n | acc linear | acc +MAMMOTH | Δ acc | acc +mammoth-moe | auc linear | auc +MAMMOTH "
            "| Δ auc | auc +mammoth-moe | s/epoch linear / ours / pkg |",
            "|" + "---|" * 11,
        ]
        for agg, label in AGGREGATORS.items():
            cell = {(p, m): runs.get((dataset, agg, p, m), {}) for p in PROJECTIONS for m in metrics}
            if not any(cell.values()):
                continue
            row = [label, str(len(cell[("mammoth", "test/acc")]))]
            for metric in metrics:
                lin, ours, pkg = (cell[(p, metric)] for p in PROJECTIONS)
                row += [_fmt(list(lin.values())), _fmt(list(ours.values()))]
                row += [_delta(ours, lin), _fmt(list(pkg.values()))]
            times = [epoch_s.get((dataset, agg, p)) for p in PROJECTIONS]
            row.append(" / ".join(f"{statistics.median(t):.3f}" if t else "—" for t in times))
            lines.append("| " + " | ".join(row) + " |")
            versus_pkg = paired(cell[("mammoth", "test/acc")], cell[("mammoth_pkg", "test/acc")], higher=True)
            if versus_pkg.n:
                pkg_diffs.append((dataset, label, versus_pkg))
        lines.append("")

    if pkg_diffs:
        lines += [
            "### Ours vs mammoth-moe 0.1.2, paired by (repeat, fold)",
            "",
            "Δ: accuracy of ours - the package's, mean over the runs both hold, with its 95 % t-interval; a tie (the "
            "interval holds 0) is what agreement can show (`zoo.leaderboard.compare`).",
            "",
            "| dataset | aggregator | n | Δ acc [95 % CI] | outcome |",
            "|---|---|---|---|---|",
        ]
        for dataset, label, c in pkg_diffs:
            lines.append(f"| {dataset} | {label} | {c.n} | {c.delta()} | {c.verdict} |")
    return lines


def dispatch_plots(page) -> list[str]:
    """Where the first three MAMMOTH runs' dispatch plots are."""
    methods = {method_name(a, p) for a in AGGREGATORS for p in PROJECTIONS}
    plots = [r.extra["dispatch_plot"] for r in page.records if r.method in methods and r.extra.get("dispatch_plot")]
    plots = plots[:3]
    if not plots:
        return []
    return [
        "Dispatch plots (which expert / slot each instance is dispatched to) are saved with each "
        "MAMMOTH run, e.g. " + ", ".join(f"`{p}`" for p in plots) + "."
    ]


def bench(page) -> list[str]:
    """The module speed table of ``package_compare.py``'s file, or how to make it."""
    path = page.results / BENCH_FILE
    if not path.exists():
        return ["", "Speed benchmark: not run yet (`python -m zoo_tasks.mil.package_compare`)."]
    bench = json.loads(path.read_text())
    # the file was written before the module moved from tasks.vision to zoo_tasks.mil (same program): show today's name
    command = bench["command"].replace("python -m tasks.vision.", "python -m zoo_tasks.mil.")
    lines = [
        "",
        f"### Module speed, one bag per step (`{command}`)",
        "",
        "| dataset | aggregator | s/epoch ours | s/epoch package | ours / package | params ours | params package |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in bench["rows"]:
        lines.append(
            f"| {r['dataset']} | {r['aggregator']} | {r['ours_epoch_s']:.3f} | {r['package_epoch_s']:.3f} "
            f"| {r['ours_epoch_s'] / r['package_epoch_s']:.2f} | {r['ours_params']} | {r['package_params']} |"
        )
    lines.append(
        f"\nMachine: {machine_phrase(bench.get('machine'))}; torch {bench.get('torch', '?')}; {bench.get('note', '')}"
    )
    return lines
