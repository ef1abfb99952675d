"""``leaderboard/router_matrix.md``: every router on every task's representative row, each tuned with the same
validation-only budget (issue 26). Generated from the records in ``results/router_matrix/`` alone.

Records: ``task="router_matrix"``, ``method`` = the router (or ``"dense"``), ``dataset`` = the task; their
``extra["tuning"]`` says how the cell was tuned. Routers that cannot route a task's mixture are listed in
``results/router_matrix/not_applicable.jsonl`` (one ``{"task", "router", "reason"}`` per line) and shown with
their reason.
"""

from __future__ import annotations

import json
import math
import statistics
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from zoo.leaderboard.compare import BETTER, TIE, TOO_FEW, WORSE, cpu_note, holm, paired
from zoo.leaderboard.cpu_identity import machine_counts
from zoo.leaderboard.record import RunRecord, results_dir

MATRIX_TASK = "router_matrix"
DENSE = "dense"
NOT_APPLICABLE = "not_applicable.jsonl"
NO_BETTER = "**no router is better than the dense twin**"


def read_not_applicable(root: Path | None = None) -> dict[tuple[str, str], str]:
    """(task, router) -> why the router cannot route that task's mixture."""
    path = results_dir(MATRIX_TASK, root) / NOT_APPLICABLE
    found = {}
    if path.is_file():
        for line in path.read_text().splitlines():
            if line.strip():
                item = json.loads(line)
                found[(item["task"], item["router"])] = item["reason"]
    return found


def write_not_applicable(task: str, router: str, reason: str, root: Path | None = None) -> None:
    found = read_not_applicable(root)
    found[(task, router)] = reason
    _write_not_applicable(found, root)


def clear_not_applicable(task: str, router: str, root: Path | None = None) -> None:
    """Drop the n/a of ``router`` on ``task`` (the task's model routes it now)."""
    found = read_not_applicable(root)
    found.pop((task, router), None)
    _write_not_applicable(found, root)


def _write_not_applicable(found: dict[tuple[str, str], str], root: Path | None) -> None:
    folder = results_dir(MATRIX_TASK, root)
    folder.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps({"task": t, "router": r, "reason": why}) for (t, r), why in sorted(found.items())]
    (folder / NOT_APPLICABLE).write_text("\n".join(lines) + "\n")


def _mean_std(values: Sequence[float]) -> tuple[float, float, int]:
    finite = [v for v in values if math.isfinite(v)]
    if not finite:
        return math.nan, math.nan, 0
    return statistics.fmean(finite), statistics.stdev(finite) if len(finite) > 1 else 0.0, len(finite)


def _seed_values(records: Sequence[RunRecord], metric: str) -> dict[tuple[int, int | None], float]:
    """(seed, fold) -> finite value of ``metric`` of one cell's records."""
    values = {(rec.seed, rec.fold): rec.metrics.get(metric, math.nan) for rec in records}
    return {key: v for key, v in values.items() if math.isfinite(v)}


def versus_dense(cells: Mapping[str, Sequence[RunRecord]], metric: str, higher: bool) -> str:
    """Each router against the dense twin of its row by ``zoo.leaderboard.compare``: paired by seed, 95 % t-interval
    of the mean gain, Holm-corrected over the row's routers (8-9 comparisons a row: unadjusted, about one false
    "better" a row by chance alone at n = 3 with the old non-overlap of ±1 s.e.); fewer than 3 seed pairs: n too
    small. ``cells``: column -> the row's records of that column."""
    dense = _seed_values(cells.get(DENSE, []), metric)
    routers = [c for c in sorted(cells) if c != DENSE and _seed_values(cells[c], metric)]
    if not dense or not routers:
        return "not enough cells run"
    comparisons = []
    for column in routers:
        ours = _seed_values(cells[column], metric)
        keys = set(ours) & set(dense)
        paired_runs = [[r for r in cells[c] if (r.seed, r.fold) in keys] for c in (column, DENSE)]
        note = cpu_note(*paired_runs)
        comparisons.append(paired(ours, dense, higher, note=note))
    by_outcome: dict[str, list[str]] = defaultdict(list)
    for column, c in zip(routers, holm(comparisons)):
        said = f"{c.n} pair{'s' if c.n != 1 else ''}" if c.outcome == TOO_FEW else f"Δ {c.delta()}"
        by_outcome[c.outcome].append(f"{column} ({said}{', ' + c.note if c.note else ''})")
    better = by_outcome.pop(BETTER, [])
    parts = [f"better than the dense twin: {', '.join(better)}" if better else NO_BETTER]
    parts += [f"{o}: {', '.join(by_outcome[o])}" for o in (TIE, WORSE, TOO_FEW) if o in by_outcome]
    return "; ".join(parts)


def _health(records: Sequence[RunRecord]) -> tuple[float, float, float] | None:
    """Mean over runs and layers of (load entropy, dead experts, dropped fraction) in the test stage (else the
    last stage that was summarised)."""
    rows = []
    for rec in records:
        stages = rec.routing or {}
        stage = stages.get("test") or stages.get("validate") or stages.get("train")
        for layer in (stage or {}).values():
            tokens = layer.get("tokens") or 0
            dropped = (layer.get("dropped_tokens") or 0) / tokens if tokens else 0.0
            rows.append((layer.get("load_entropy", math.nan), layer.get("dead_experts", 0), dropped))
    if not rows:
        return None
    return tuple(statistics.fmean(col) for col in zip(*rows))  # type: ignore[return-value]


def _tuning_seconds(recs: Sequence[RunRecord]) -> tuple[float, bool]:
    """One cell's tuning time and whether it is measured: the study's trial times when its records hold them
    (``TuneResult.trial_wall_s``), else the trials times the cell's mean tested run (an upper bound: a pruned trial
    stops early)."""
    tuning = (recs[0].extra or {}).get("tuning") or {}
    trials, measured = tuning.get("trials") or 0, tuning.get("trial_wall_s") or []
    if len(measured) == trials:
        return float(sum(measured)), True
    return trials * statistics.fmean(rec.wall_time_s for rec in recs), False


def _time_table(cells: Mapping[tuple[str, str], Sequence[RunRecord]], tasks: Sequence[str]) -> list[str]:
    """Wall time per row, its tested runs (the records) and its cells' tuning (``_tuning_seconds``), and the CPU
    kinds the row's records ran on."""
    out = [
        "## Time and machines per row",
        "",
        "Hours of one process, summed from the records' wall times; ≈: some cells' tuning is estimated as trials x "
        "the cell's mean tested run (their records predate the trial times). Machines: records per CPU kind (a "
        "deterministic run repeats to the last bit on its own kind).",
        "",
        "| task | cells | tested runs | tuning | total | machines |",
        "|---|---|---|---|---|---|",
    ]
    for task in tasks:
        recs = {column: rs for (t, column), rs in cells.items() if t == task}
        if not recs:
            continue
        runs = sum(rec.wall_time_s for rs in recs.values() for rec in rs)
        tuned = [_tuning_seconds(rs) for rs in recs.values()]
        tuning = sum(seconds for seconds, _ in tuned)
        mark = "" if all(measured for _, measured in tuned) else "≈ "
        hours = [f"{runs / 3600:.2f}", f"{mark}{tuning / 3600:.2f}", f"{mark}{(runs + tuning) / 3600:.2f}"]
        machines = machine_counts([rec for rs in recs.values() for rec in rs])
        out.append(f"| {task} | {len(recs)} | " + " | ".join(hours) + f" | {machines} |")
    return out


def render_matrix(
    records: Sequence[RunRecord],
    metrics: Mapping[str, tuple[str, bool]],
    routers: Sequence[str],
    not_applicable: Mapping[tuple[str, str], str],
    notes: str = "",
    without_row: Sequence[str] = (),
    stale: Callable[[RunRecord], bool] | None = None,
) -> str:
    """The page. ``metrics``: task -> (the metric its row is ranked by, higher is better); ``routers``: every
    name in ``zoo.moe.ROUTERS`` (columns, after the dense twin); ``without_row``: the installed tasks whose specs
    name no matrix row (listed under the table, so a missing task is stated, not silent); ``stale(record)``: whether
    other code or settings than today's made the record (its cell is marked °)."""
    cells: dict[tuple[str, str], list[RunRecord]] = defaultdict(list)
    for rec in records:
        cells[(rec.dataset, rec.method)].append(rec)
    columns = [DENSE, *routers]
    tasks = sorted({task for task, _ in cells} | {task for task, _ in not_applicable} | set(metrics))
    out = [
        "# Router x task table",
        "",
        "Every router of `zoo.moe.ROUTERS` on one representative benchmark row per task, beside the task's dense "
        "twin. Each cell was tuned by `zoo tune` on the validation metric only, with the same number of trials "
        "(seed 1000, never a benchmark seed), then run on the benchmark seeds; only those runs were tested. "
        "Cells: mean ± std (n) of the task's metric, [rank within the row]. Generated by `zoo render matrix` from "
        "`results/router_matrix/`.",
        "",
        "| task (metric) | " + " | ".join(columns) + " |",
        "|---|" + "---|" * len(columns),
    ]
    reasons: dict[str, int] = {}  # one footnote per distinct reason, the router's name replaced by R
    verdicts, marked = [], []
    for task in tasks:
        metric, higher = metrics.get(task, ("", True))
        stats = {}
        for column in columns:
            values = [rec.metrics.get(metric, math.nan) for rec in cells.get((task, column), [])]
            if values:
                stats[column] = _mean_std(values)
        ranked = sorted((s[0], c) for c, s in stats.items() if s[2])
        if higher:
            ranked.reverse()
        rank = {c: i + 1 for i, (_, c) in enumerate(ranked)}
        row, row_stale = [], False
        for column in columns:
            if column in stats and stats[column][2]:
                mean, std, n = stats[column]
                old = stale is not None and any(stale(rec) for rec in cells[(task, column)])
                marked.append(old)
                row_stale = row_stale or old
                row.append(f"{mean:.4f} ± {std:.4f} ({n}) [{rank[column]}]" + (" °" if old else ""))
            elif (task, column) in not_applicable:
                reason = not_applicable[(task, column)].removeprefix("model.router: ").replace(f"'{column}'", "R")
                number = reasons.setdefault(reason, len(reasons) + 1)
                row.append(f"n/a ({number})")
            else:
                row.append("not run")
        arrow = "↑" if higher else "↓"
        out.append(f"| {task} ({metric} {arrow}) | " + " | ".join(row) + " |")
        verdict = versus_dense({c: cells[(task, c)] for c in columns if (task, c) in cells}, metric, higher)
        if row_stale:
            verdict += " (cells marked ° still hold runs of other code or settings: a verdict on mixed runs)"
        verdicts.append(f"- {task}: {verdict}")
    out += _footnotes(any(marked), reasons, without_row)
    out += ["", *_versus_dense_section(verdicts)]
    out += ["", *_health_table(cells, tasks, routers), "", *_tuning_table(cells)]
    out += ["", *_time_table(cells, tasks)]
    if notes:
        out += ["", notes.strip()]
    return "\n".join(out) + "\n"


def _health_table(cells: Mapping, tasks: Sequence[str], routers: Sequence[str]) -> list[str]:
    """Routing health per cell: load entropy / dead experts / dropped token fraction, test stage."""
    out = ["## Routing health (test stage, mean over runs and layers)", ""]
    out += ["load entropy (1 = uniform) / dead experts / dropped token fraction.", ""]
    out += ["| task | " + " | ".join(routers) + " |", "|---|" + "---|" * len(routers)]
    for task in tasks:
        row = []
        for router in routers:
            health = _health(cells.get((task, router), []))
            row.append("—" if health is None else f"{health[0]:.3f} / {health[1]:.1f} / {health[2]:.3f}")
        out.append(f"| {task} | " + " | ".join(row) + " |")
    return out


def _tuning_table(cells: Mapping) -> list[str]:
    """How each cell was tuned: trials (pruned), the best validation value and the space."""
    out = ["## How each cell was tuned", "", "| task | cell | trials (pruned) | best val | space |"]
    out.append("|---|---|---|---|---|")
    for (task, column), recs in sorted(cells.items()):
        tuning = (recs[0].extra or {}).get("tuning") or {}
        if tuning:
            out.append(
                f"| {task} | {column} | {tuning.get('trials')} ({tuning.get('pruned')}) | "
                f"{tuning.get('metric')} {tuning.get('value', math.nan):.4f} | {tuning.get('space')} |"
            )
        else:
            out.append(f"| {task} | {column} | not tuned | | |")
    return out


def _versus_dense_section(verdicts: list[str]) -> list[str]:
    """Each row's routers against its dense twin (``zoo.leaderboard.compare``'s rule, Holm over the row)."""
    return [
        "## Routers against the dense twin",
        "",
        "Each router against the dense twin of its row, paired by seed: Δ is the mean gain over the seeds both ran "
        "(positive = the router better, in the metric's direction) with its Student-t interval. The 8-9 routers of a "
        "row are Holm-corrected together (each interval at its Holm level, shown), so that a row prints a false "
        '"better" with probability ≤ 5 % however many routers it holds; better / worse: the interval excludes 0; '
        "tie: it holds 0; n too small: fewer than 3 seed pairs. `zoo.leaderboard.compare` is the rule, the same as "
        "every task page's.",
        "",
        *verdicts,
    ]


def _footnotes(marked: bool, reasons: Mapping[str, int], without_row: Sequence[str]) -> list[str]:
    """Under the table: what ° means (when a cell has it), the n/a reasons by number, the tasks without a row."""
    out: list[str] = []
    if marked:
        out += [
            "",
            "° some runs of the cell were made by other code of its task or other matrix settings than today's: "
            "`zoo reproduce matrix --rerun-stale` re-runs them (and the cell's tuning, when its study ran other code).",
        ]
    if reasons:
        out += ["", "n/a: the router cannot route the task's mixture; the model's own words when built with it:", ""]
        out += [f"({n}) {text}" for text, n in reasons.items()]
    if without_row:
        out += [
            "",
            f"Not in the table: {', '.join(sorted(without_row))} (their specs name no matrix row; the notes say why).",
        ]
    return out
