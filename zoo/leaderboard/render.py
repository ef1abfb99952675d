"""Render a task's run records into a markdown table, published reference numbers beside ours."""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from pathlib import Path

from zoo.leaderboard.record import RunRecord
from zoo.registry import BenchmarkRow, TaskSpec, load_object, repository_root


def fmt_number(value: float) -> str:
    """Three decimals for small metrics (MSE, accuracy), one for large ones (returns, seconds)."""
    return f"{value:.3f}" if abs(value) < 10 else f"{value:.1f}"


def finite_mean(values) -> float:
    """Mean of the values that are neither None nor NaN; NaN when none is left."""
    values = [v for v in values if v is not None and not math.isnan(v)]
    return statistics.fmean(values) if values else math.nan


def fmt_value(value: float | None, digits: int = 3) -> str:
    """A fixed-decimals number, or ``—`` for a missing (None / NaN) one."""
    return "—" if value is None or math.isnan(value) else f"{value:.{digits}f}"


def mean_std(values: list[float]) -> str:
    """``mean ± std (n)``; std is the sample standard deviation, omitted for a single run."""
    values = [v for v in values if not math.isnan(v)]
    if not values:
        return "—"
    mean = statistics.fmean(values)
    if len(values) == 1:
        return f"{fmt_number(mean)} (n=1)"
    return f"{fmt_number(mean)} ± {fmt_number(statistics.stdev(values))} (n={len(values)})"


def _published_columns(rows: tuple[BenchmarkRow, ...], metric: str) -> dict[str, dict[str, float]]:
    """Column label -> dataset -> published value. Keys ``"metric"`` belong to the row's own method,
    ``"Name:metric"`` to a method we do not run (e.g. ``"iTransformer:test/mse"``)."""
    columns: dict[str, dict[str, float]] = defaultdict(dict)
    for row in rows:
        for key, value in row.published.items():
            owner, _, name = key.rpartition(":")
            if name == metric:
                columns[f"{owner or row.method} (published)"][row.dataset] = value
    return columns


def grouped_notes(rows: tuple[BenchmarkRow, ...]) -> list[str]:
    """One markdown bullet per distinct row note, naming the rows it applies to (in benchmark order).

    A note whose rows are every pair of some methods and some datasets reads ``<methods> on <datasets>``
    (``all methods`` when it covers each one), so a long grid with one shared reduction is one line."""
    by_note: dict[str, list[BenchmarkRow]] = defaultdict(list)
    for row in rows:
        if row.note:
            by_note[row.note].append(row)
    all_methods = {r.method for r in rows}
    bullets = []
    for note, noted in by_note.items():
        methods = list(dict.fromkeys(r.method for r in noted))
        datasets = list(dict.fromkeys(r.dataset for r in noted))
        pairs = {(r.method, r.dataset) for r in noted}
        if len(pairs) == len(methods) * len(datasets):
            who = "all methods" if len(all_methods) > 1 and set(methods) == all_methods else ", ".join(methods)
            where = f"{who} on {', '.join(datasets)}"
        else:
            where = ", ".join(f"{r.method} on {r.dataset}" for r in noted)
        bullets.append(f"- {where}: {note}")
    return bullets


def render_task(spec: TaskSpec, records: list[RunRecord]) -> str:
    """Markdown for ``leaderboard/<task>.md``: one table per metric plus wall time, provenance and notes."""
    methods = list(dict.fromkeys(r.method for r in spec.benchmark))
    datasets = list(dict.fromkeys(r.dataset for r in spec.benchmark))
    for rec in records:
        if rec.method not in methods:
            methods.append(rec.method)
        if rec.dataset not in datasets:
            datasets.append(rec.dataset)
    cells: dict[tuple[str, str], list[RunRecord]] = defaultdict(list)
    for rec in records:
        cells[(rec.dataset, rec.method)].append(rec)
    metrics = list(spec.metrics) or sorted({m for r in records for m in r.metrics})

    lines = [
        f"# {spec.name}",
        "",
        spec.description,
        "",
        f"Produced by `zoo reproduce {spec.name}`; every number comes from a record in "
        f"`leaderboard/results/{spec.name}/` (config, seed, versions, wall time, commit). "
        "† marks cells run with reduced settings (see notes). Published numbers are quoted, not re-run.",
        "",
    ]
    for metric in metrics:
        better = "higher" if metric in spec.higher_is_better else "lower"
        published = _published_columns(spec.benchmark, metric)
        header = ["dataset", *methods, *published]
        lines += [f"## {metric} ({better} is better)", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        for ds in datasets:
            row = [ds]
            for method in methods:
                recs = cells.get((ds, method), [])
                text = mean_std([r.metrics.get(metric, math.nan) for r in recs]) if recs else "not run"
                row.append(text + (" †" if any(r.reduced for r in recs) else ""))
            row += [fmt_number(published[col][ds]) if ds in published[col] else "" for col in published]
            lines.append("| " + " | ".join(row) + " |")
        lines.append("")

    lines += [
        "## Wall time per run (s)",
        "",
        "| dataset | " + " | ".join(methods) + " |",
        "|" + "---|" * (len(methods) + 1),
    ]
    partial_seen = False
    for ds in datasets:
        times = []
        for m in methods:
            recs = cells.get((ds, m), [])
            partial = any(_time_is_partial(r) for r in recs)
            partial_seen |= partial
            times.append((mean_std([r.wall_time_s for r in recs]) + (" ‡" if partial else "")) if recs else "")
        lines.append(f"| {ds} | " + " | ".join(times) + " |")
    if partial_seen:
        lines += [
            "",
            "‡ a run in this cell resumed from a checkpoint that did not store the time spent before the restart "
            "(written before records added it), so its wall time covers only the last process.",
        ]
    lines.append("")

    if spec.extra_tables:
        extra = load_object(spec.extra_tables)(records)
        if extra:
            lines += [extra.rstrip(), ""]

    notes = grouped_notes(spec.benchmark)
    sources = sorted({r.published_source for r in spec.benchmark if r.published_source})
    versions = sorted({", ".join(f"{k} {v}" for k, v in r.versions.items()) for r in records})
    machines = sorted({f"{r.machine.get('cpu', '?')} ({r.machine.get('cores', '?')} cores)" for r in records})
    commits = sorted({r.commit[:12] for r in records if r.commit})
    lines += [
        "## Notes",
        "",
        *notes,
        "",
        "Published numbers: " + ("; ".join(sources) or "none"),
        "",
        f"Runs: {len(records)} records; machines: {'; '.join(machines) or '—'}; commits: {', '.join(commits) or '—'}",
        "",
        "Versions: " + (" | ".join(versions) or "—"),
        "",
    ]
    return "\n".join(lines)


def _time_is_partial(record: RunRecord) -> bool:
    extra = record.extra or {}
    return bool(extra.get("resumed_from_checkpoint")) and "wall_time_before_resume_s" not in extra


def render_index(leaderboard_dir: Path | None = None) -> str:
    """``leaderboard/README.md``: one line per table in the folder."""
    folder = leaderboard_dir or repository_root() / "leaderboard"
    lines = [
        "# Leaderboard",
        "",
        "Each table is generated from the JSON records under `results/<table>/`; "
        "re-render one with `zoo render TASK`, extend it with `zoo reproduce TASK`.",
        "",
    ]
    for page in sorted(folder.glob("*.md")):
        if page.name == "README.md":
            continue
        first = next((ln for ln in page.read_text().splitlines() if ln.strip() and not ln.startswith("#")), "")
        lines.append(f"- [{page.stem}]({page.name}): {_summary(first)}")
    return "\n".join(lines) + "\n"


def _summary(text: str, limit: int = 160) -> str:
    """The first sentence of ``text`` when it fits in ``limit`` characters, else ``text`` cut at a word."""
    sentence = text.split(". ", 1)[0].rstrip(".") + "."
    if len(sentence) <= limit:
        return sentence
    return text[:limit].rsplit(" ", 1)[0].rstrip(",;:") + " …"
