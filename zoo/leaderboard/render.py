"""Render a task's run records into a markdown table, published reference numbers beside ours."""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from pathlib import Path

from zoo.leaderboard.cpu_identity import machine_counts
from zoo.leaderboard.draw import draw_tables
from zoo.leaderboard.numbers import finite_mean, fmt_number, fmt_value
from zoo.leaderboard.provenance import UNKNOWN, changed_sources, code_version, written_by_current_code
from zoo.leaderboard.record import RunRecord
from zoo.leaderboard.results_table import ResultTable
from zoo.leaderboard.settings import settings_changed
from zoo.leaderboard.targets import targets_section
from zoo.leaderboard.twins import twin_section
from zoo.registry import BenchmarkRow, TaskSpec, repository_root


def mean_std(values: list[float]) -> str:
    """``mean ± std (n)``; std is the sample standard deviation, omitted for a single run."""
    values = [v for v in values if not math.isnan(v)]
    if not values:
        return "—"
    mean = statistics.fmean(values)
    if len(values) == 1:
        return f"{fmt_number(mean)} (n=1)"
    return f"{fmt_number(mean)} ± {fmt_number(statistics.stdev(values), like=mean)} (n={len(values)})"


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


def reports(spec: TaskSpec, table: ResultTable, dataset: str, metric: str) -> bool:
    """Whether ``dataset`` belongs in ``metric``'s table: one of its records holds the metric, or one of its
    benchmark rows has not run yet (it may); a dataset whose finished runs do not report the metric (a task whose
    datasets are scored by different metrics) gets no row of empty cells."""
    recs = [r for method in table.methods for r in table.records_of(method, dataset)]
    pending = any(r.dataset == dataset and not table.records_of(r.method, dataset) for r in spec.benchmark)
    return pending or any(metric in r.metrics for r in recs)


def render_task(spec: TaskSpec, records: list[RunRecord], leaderboard_dir: Path | None = None) -> str:
    """Markdown for ``leaderboard/<task>.md``, all of it from the records and the spec's declarations.

    One table per metric (mean ± std (n) per cell, † for reduced settings, ◇ for a cell whose runs come from
    different code versions, published numbers beside ours), wall time, the spec's targets judged on the records,
    the MoE method against its dense twin (``zoo.leaderboard.twins``), the routing summary of the MoE runs, the
    task's declared tables and figures (``extra_tables``, drawn by ``zoo.leaderboard.draw``), then the notes:
    ``<leaderboard>/notes/<task>.md`` (run history and caveats, written by people) and provenance.
    """
    repo = repository_root()
    table = ResultTable(spec.benchmark, records, spec.higher_is_better, lambda r: code_version(r, repo))
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
    lines += fidelity_link(spec.name, leaderboard_dir or repo / "leaderboard")
    lines += metric_sections(spec, records, table, repo)
    lines += wall_time_section(table)
    lines += targets_section(spec.targets, table)
    lines += twin_section(spec, table)
    lines += tuning_section(spec, records)
    lines += routing_section(table)
    extra = draw_tables(spec, records, leaderboard_dir)
    if extra:
        lines += [extra.rstrip(), ""]
    lines += notes_section(spec, records, leaderboard_dir or repo / "leaderboard")
    return "\n".join(lines)


def fidelity_link(task: str, leaderboard_dir: Path) -> list[str]:
    """A line pointing at the task's section of ``fidelity.md`` (its methods against their authors' code), when
    that page has one."""
    page = leaderboard_dir / "fidelity.md"
    if not page.is_file() or f"\n## {task}\n" not in page.read_text():
        return []
    return [
        f"Fidelity: how each method here compares with its authors' code (the same weights and inputs through both, "
        f"and short trainings side by side): [fidelity.md#{task}](fidelity.md#{task}).",
        "",
    ]


def metric_sections(spec: TaskSpec, records: list[RunRecord], table: ResultTable, repo: Path) -> list[str]:
    """One table per metric (cells marked † reduced, ◇ mixed code versions, ° not current, × undeclared), then the
    footnotes of the marks that appear."""
    metrics = list(spec.metrics) or sorted({m for r in records for m in r.metrics})
    versions_of = {cell: table.code_versions(*cell) for cell in table.cells}
    mixed = {cell for cell, v in versions_of.items() if len(set(v)) > 1 or any(x.startswith(UNKNOWN) for x in v)}
    current = {id(r): written_by_current_code(r) for r in records}
    other_settings = [r for r in records if settings_changed(spec, r)]
    # is_current's two tests, each computed once per record (settings_changed resolves the record's config)
    stale = {id(r) for r in records if current[id(r)] is not True} | {id(r) for r in other_settings}
    declared = {(row.method, row.dataset) for row in spec.benchmark}
    not_current = {cell for cell, recs in table.cells.items() if any(id(r) in stale for r in recs)}

    def cell_text(method: str, ds: str, metric: str) -> tuple[str, bool]:
        recs = table.records_of(method, ds)
        undeclared = not recs and (method, ds) not in declared
        if recs:
            text = mean_std([r.metrics.get(metric, math.nan) for r in recs])
        else:
            text = "×" if undeclared else "not run"
        text += " †" if table.reduced(method, ds) else ""
        text += " ◇" if (method, ds) in mixed else ""
        text += " °" if (method, ds) in not_current else ""
        return text, undeclared

    lines, undeclared_seen = [], False
    for metric in metrics:
        datasets = [ds for ds in table.datasets if reports(spec, table, ds, metric)]
        if not datasets:
            continue
        better = "higher" if metric in spec.higher_is_better else "lower"
        published = table.published_columns(metric)
        header = ["dataset", *table.methods, *(f"{m} (published)" for m in published)]
        lines += [f"## {metric} ({better} is better)", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        for ds in datasets:
            row = [ds]
            for method in table.methods:
                text, undeclared = cell_text(method, ds, metric)
                undeclared_seen |= undeclared
                row.append(text)
            for method in published:
                value = table.published(method, ds, metric)
                row.append("" if value is None else fmt_number(value))
            lines.append("| " + " | ".join(row) + " |")
        lines.append("")
    if undeclared_seen:
        lines += ["× not in the benchmark: the spec declares no row for this method on this dataset.", ""]
    if mixed:
        lines += [
            "◇ the runs of this cell come from different code versions, torch thread counts or CPU models (CPU "
            "float sums change with the thread count, BLAS kernels with the CPU), or some name a commit that does "
            "not hold their task's code (written from an uncommitted tree), so the cell cannot be repeated as one "
            "version from its records; re-running its rows at one commit with one thread count on one CPU model "
            "removes the mark. Code version: the record's "
            "source fingerprint, or for older records the git trees of the task's folder and `zoo/moe` at its "
            "commit. Records of unknown code: "
            + f"{sum(v.startswith(UNKNOWN) for vs in versions_of.values() for v in vs)} of {len(records)}.",
            "",
        ]
    if any(current[id(r)] is not True for r in records):
        lines += [*current_code_note(records, current, repo), ""]
    if other_settings:
        lines += [
            f"° also: {len(other_settings)} of {len(records)} records ran with other settings than their rows declare "
            "now (the row's config file or overrides changed since); `zoo reproduce "
            f"{spec.name} --rerun-stale` re-runs them.",
            "",
        ]
    return lines


def wall_time_section(table: ResultTable) -> list[str]:
    """Wall time per run (s), mean ± std per cell; ‡ where a resumed run's time covers only its last process."""
    lines = [
        "## Wall time per run (s)",
        "",
        "| dataset | " + " | ".join(table.methods) + " |",
        "|" + "---|" * (len(table.methods) + 1),
    ]
    partial_seen = False
    for ds in table.datasets:
        times = []
        for m in table.methods:
            recs = table.records_of(m, ds)
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
    return lines


def notes_section(spec: TaskSpec, records: list[RunRecord], leaderboard_dir: Path) -> list[str]:
    """The notes people wrote (``notes/<task>.md``), the rows' notes, published sources and the records'
    provenance (machines, commits, versions)."""
    notes_file = leaderboard_dir / "notes" / f"{spec.name}.md"
    versions = sorted({", ".join(f"{k} {v}" for k, v in r.versions.items()) for r in records})
    commits = sorted({r.commit[:12] for r in records if r.commit})
    sources = sorted({r.published_source for r in spec.benchmark if r.published_source})
    machines = machine_counts(records)
    lines = ["## Notes", ""]
    if notes_file.is_file():
        lines += [notes_file.read_text().strip(), ""]
    return lines + [
        *grouped_notes(spec.benchmark),
        "",
        "Published numbers: " + ("; ".join(sources) or "none"),
        "",
        f"Runs: {len(records)} records; machines: {machines or '—'}; commits: {', '.join(commits) or '—'}",
        "",
        "Versions: " + (" | ".join(versions) or "—"),
        "",
    ]


def current_code_note(records: list[RunRecord], current: dict[int, bool | None], repo: Path) -> list[str]:
    """The footnote for ``°``: how many records were written by code other than the checkout's, which files
    changed since their commits, and how many records carry no fingerprint to tell."""
    changed = [r for r in records if current[id(r)] is False]
    unfingerprinted = sum(current[id(r)] is None for r in records)
    files = sorted({f for r in changed for f in changed_sources(r, repo)})
    commits = sorted({r.commit[:7] for r in changed if r.commit})
    text = (
        "° some runs of this cell were not written by the code this page was rendered from, so the records alone "
        "do not show that re-running the row at this commit repeats them (the notes say which were re-run and "
        f"compared). {len(changed)} of {len(records)} records carry a source fingerprint that differs from the "
        "current code's"
    )
    if changed:
        text += f" (since {', '.join(commits)}: " + (", ".join(f"`{f}`" for f in files) or "files not known here") + ")"
    text += f"; {unfingerprinted} carry none (written before records were fingerprinted)."
    return [text]


def tuning_section(spec: TaskSpec, records: list[RunRecord]) -> list[str]:
    """How each tuned row was tuned (issue 26): trials, the space, the chosen values, from the records; the other
    rows run their configs as written (stated once)."""
    tuned = [row for row in spec.benchmark if row.tune_trials]
    if not tuned:
        return []
    lines = [
        "## Tuning",
        "",
        f"Rows marked tuned ran `zoo tune` first ({tuned[0].tune_trials} finished trials each, Optuna TPE, "
        "validation metric only, seed 1000), then every seed with the chosen values; the other rows run their "
        "configs as written.",
        "",
        "| row | trials (pruned) | best validation | chosen | space |",
        "|---|---|---|---|---|",
    ]
    for row in tuned:
        found = next(
            (
                r.extra.get("tuning")
                for r in records
                if r.method == row.method and r.dataset == row.dataset and (r.extra or {}).get("tuning")
            ),
            None,
        )
        if not found:
            lines.append(f"| {row.method} / {row.dataset} | not run | | | |")
            continue
        chosen = ", ".join(
            f"{key.rpartition('.')[2]}={f'{value:.3g}' if isinstance(value, float) else value}"
            for key, value in found["params"].items()
        )
        lines.append(
            f"| {row.method} / {row.dataset} | {found['trials']} ({found['pruned']}) | {found['metric']} "
            f"{fmt_number(found['value'])} | {chosen} | {found['space']} |"
        )
    return [*lines, ""]


def routing_section(table: ResultTable) -> list[str]:
    """Per (dataset, method, layer): the test-time routing summary of its runs (training's when no test stage was
    recorded), averaged over runs. Empty when no record carries a routing summary."""
    acc: dict[tuple[str, str, str, str], list[dict]] = defaultdict(list)
    for (method, ds), recs in table.cells.items():
        for rec in recs:
            stage = "test" if "test" in rec.routing else next(iter(rec.routing), None)
            for layer, summary in (rec.routing.get(stage) or {}).items() if stage else ():
                acc[(ds, method, layer, stage)].append(summary)
    if not acc:
        return []
    keys = ("entropy", "load_entropy", "max_over_mean_load", "dead_experts", "dropped_tokens")
    lines = [
        "## Routing",
        "",
        "From each run's routing summary (`zoo.moe.routing_summary`, the same code for every task): normalised "
        "router entropy (1 = uniform), load entropy (1 = balanced), max/mean expert load, dead experts, dropped "
        "tokens; mean over runs.",
        "",
        "| dataset | method | layer | stage | runs | " + " | ".join(keys) + " |",
        "|---|---|---|---|---|" + "---|" * len(keys),
    ]
    for ds in table.datasets:
        for method in table.methods:
            for (d, m, layer, stage), summaries in acc.items():
                if (d, m) != (ds, method):
                    continue
                cells = [fmt_value(finite_mean(s.get(k) for s in summaries), 2) for k in keys]
                lines.append(f"| {ds} | {method} | {layer} | {stage} | {len(summaries)} | " + " | ".join(cells) + " |")
    return lines + [""]


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
        "Every comparison these pages print (targets, an MoE method against its dense twin, the router matrix) "
        "follows one rule, `zoo.leaderboard.compare`: runs paired by seed (and fold), a 95 % Student-t interval of "
        "the mean difference in the metric's direction; **better** or **worse** when it excludes 0, **tie** when it "
        "holds 0, **n too small** below 3 pairs; Holm-corrected where one row compares a method with several.",
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
