"""SPHERE's own page sections (declared in ``spec.TABLES``): the issue's targets that need more than a cell mean
(r_e higher at every stage boundary, by the pages' rule ``zoo.leaderboard.compare``; the speed ratio), the success
matrix per stage, r_e(K) per stage (a table, every seed, and a figure), routing load per task and speed, all read
from the records' ``extra`` (see ``ContinualPPO.extra_results``) and the newest ``zoo bench sphere --leaderboard``
file.
"""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from pathlib import Path

from zoo.bench.claims import NO_PROVENANCE, claim, claims_table, has_provenance, no_record, provenance_line
from zoo.leaderboard.compare import BETTER, holm, paired
from zoo.leaderboard.numbers import fmt_value
from zoo.leaderboard.targets import IMPROVES, Verdict, claim_met, verdict_table
from zoo.registry import repository_root

SPEED_TARGET = 0.7
SPHERE_NAME, MOE_NAME = "SPHERE", "MoE PPO"
RANK_TARGET = "SPHERE r_e(K) > MoE PPO's at every stage boundary"


def _mean(values) -> float | None:
    values = [v for v in values if v is not None]
    return statistics.fmean(values) if values else None


def stage_ranks(extra: dict) -> list[float]:
    """r_e(K) at each stage boundary (the entries recorded with a stage index), in stage order."""
    return [r for _, stage, r in sorted(extra.get("effective_rank", []), key=lambda e: e[1]) if stage >= 0]


def mean_matrix(extras: list[dict]) -> list[list[float]] | None:
    """Element-wise mean of the runs' success matrices (None when no run has a full one or their shapes differ)."""
    mats = [e["success_matrix"] for e in extras if e.get("success_matrix")]
    if not mats or len({(len(m), len(m[0])) for m in mats}) != 1:
        return None
    return [[statistics.fmean(m[i][j] for m in mats) for j in range(len(mats[0][0]))] for i in range(len(mats[0]))]


def load_spread(load_by_task: dict[str, list[float]]) -> float | None:
    """Mean total-variation distance between the tasks' expert-load distributions: 0 = every task uses the experts
    alike, 1 = disjoint experts per task (specialisation by task)."""
    tasks = sorted(load_by_task)
    pairs = [(a, b) for i, a in enumerate(tasks) for b in tasks[i + 1 :]]
    if not pairs:
        return None
    tv = [0.5 * sum(abs(x - y) for x, y in zip(load_by_task[a], load_by_task[b])) for a, b in pairs]
    return statistics.fmean(tv)


def target_lines(by_method: dict[str, list]) -> list[str]:
    """The per-stage r_e target, per dataset on which SPHERE or MoE PPO has run (the single-task rows have
    neither), as Targets-table rows (``zoo.leaderboard.targets.verdict_table``); one row saying so while neither
    has. The 1.5x success ratio is a spec target (``BeatsBy``), judged in the Targets table."""
    datasets = sorted({rec.dataset for m in (SPHERE_NAME, MOE_NAME) for rec in by_method.get(m, [])})
    if not datasets:
        return verdict_table([Verdict(RANK_TARGET, "the sequence", "needs SPHERE and MoE PPO runs", None)])
    rows = []
    for ds in datasets:
        sphere = [r for r in by_method.get(SPHERE_NAME, []) if r.dataset == ds]
        moe = [r for r in by_method.get(MOE_NAME, []) if r.dataset == ds]
        rows += rank_verdicts(ds, sphere, moe)
    return verdict_table(rows)


def rank_verdicts(dataset: str, sphere: list, moe: list) -> list[Verdict]:
    """The claim that SPHERE's r_e(K) is above MoE PPO's at every stage boundary: one comparison per boundary,
    paired by seed and Holm-corrected over the boundaries (``zoo.leaderboard.compare``), met when every boundary is
    better; the summary row also counts the seeds above at every boundary (information, not a verdict)."""
    a = {r.seed: stage_ranks(r.extra or {}) for r in sphere}
    b = {r.seed: stage_ranks(r.extra or {}) for r in moe}
    stages = {len(v) for v in (*a.values(), *b.values()) if v}
    if len(stages) != 1:
        return [Verdict(RANK_TARGET, dataset, "needs SPHERE and MoE PPO runs with r_e at every stage", None)]
    (count,) = stages
    by_stage = [({s: v[k] for s, v in a.items() if v}, {s: v[k] for s, v in b.items() if v}) for k in range(count)]
    comparisons = holm([paired(ours, theirs, higher=True) for ours, theirs in by_stage])
    rows = [
        Verdict(
            f"SPHERE r_e(K) > MoE PPO's after task {k + 1}",
            f"{dataset} (Holm over {count})",
            f"{_mean(ours.values()):.1f} vs {_mean(theirs.values()):.1f}",
            claim_met(c, IMPROVES),
            c,
        )
        for k, ((ours, theirs), c) in enumerate(zip(by_stage, comparisons))
    ]
    met = False if any(v.met is False for v in rows) else None if any(v.met is None for v in rows) else True
    paired_seeds = _paired_rank_wins(sphere, moe)
    seeds = f"; seed by seed: {paired_seeds[0]} of {paired_seeds[1]} above at every boundary" if paired_seeds else ""
    better = sum(v.comparison.outcome == BETTER for v in rows)
    summary = Verdict(RANK_TARGET, dataset, f"better at {better} of {count} boundaries{seeds}", met, None,
                      f"{better} of {count} better")  # fmt: skip
    return [summary, *rows]


def _paired_rank_wins(sphere, moe) -> tuple[int, int] | None:
    """(seeds on which SPHERE's r_e(K) is above MoE PPO's at every stage boundary, seeds both have run)."""
    moe_by_seed = {r.seed: stage_ranks(r.extra or {}) for r in moe}
    pairs = [(stage_ranks(r.extra or {}), moe_by_seed.get(r.seed)) for r in sphere]
    pairs = [(a, b) for a, b in pairs if a and b and len(a) == len(b)]
    if not pairs:
        return None
    return sum(all(x > y for x, y in zip(a, b)) for a, b in pairs), len(pairs)


def _stage_mean(curves: list[list[float]]) -> list[float]:
    curves = [c for c in curves if c]
    if not curves or len({len(c) for c in curves}) != 1:
        return []
    return [statistics.fmean(c[i] for c in curves) for i in range(len(curves[0]))]


def _latest_bench(folder: Path) -> tuple[str, dict] | None:
    """The newest ``zoo bench sphere --leaderboard`` file in ``folder``, by its date."""
    files = sorted(folder.glob("*.json"))
    if not files:
        return None
    benches = [(p.name, json.loads(p.read_text())) for p in files]
    return max(benches, key=lambda b: b[1]["date"])


def speed_verdict(bench: dict) -> list:
    """MoE PPO's speed target on a ``zoo bench sphere`` record (``zoo.bench.claims``): per repeat (the methods ran
    side by side), gain = MoE / dense env steps per CPU second - ``SPEED_TARGET``; a file without commit and source
    hash judges nothing. SPHERE's second backward pass is reported, not judged."""
    results = bench["results"]
    if "moe" not in results or "dense" not in results:
        return []
    target, where = f"{MOE_NAME} env steps per CPU s ≥ {SPEED_TARGET}x dense PPO", f"{bench['settings']['task']}"
    ours = f"{results['moe']['ratio_vs_dense']:.2f}x"
    if not has_provenance(bench):
        return [no_record(target, where, NO_PROVENANCE, ours)]
    pairs = zip(results["moe"]["runs"], results["dense"]["runs"])
    return [claim(target, where, ours, [m["env_steps_per_s"] / d["env_steps_per_s"] - SPEED_TARGET for m, d in pairs])]


def bench_lines(latest: tuple[str, dict] | None, leaderboard: Path | None = None) -> list[str]:
    """The speed table of the newest ``zoo bench sphere --leaderboard`` record, its target and provenance (a link
    relative to ``leaderboard``, default this checkout's)."""
    if latest is None:
        return []
    name, bench = latest
    lines = [
        "## Speed: environment steps per second, PPO updates included",
        "",
        f"`zoo bench sphere --leaderboard` ({name}; methods interleaved in one process; per CPU second of the "
        f"process, one torch thread). Target: MoE PPO ≥ {SPEED_TARGET}x dense PPO.",
        "",
        "| method | env steps per CPU s | per wall s | rollout CPU s | update CPU s | vs dense |",
        "|---|---|---|---|---|---|",
    ]
    for method, r in bench["results"].items():
        lines.append(
            f"| {method} | {r['env_steps_per_s']:.1f} | {fmt_value(r.get('env_steps_per_wall_s'), 1)} | "
            f"{r['rollout_s']:.1f} | {r['update_s']:.1f} | {fmt_value(r.get('ratio_vs_dense'), 2)}x |"
        )
    lines += ["", f"Settings: {json.dumps(bench.get('settings', {}))}.", ""]
    lines += claims_table(speed_verdict(bench)) if speed_verdict(bench) else []
    if has_provenance(bench):
        folder = (leaderboard or repository_root() / "leaderboard") / "results" / "sphere" / "bench"
        lines += ["", provenance_line(folder / name, bench, leaderboard)]
    else:
        lines += ["", f"{name}: no commit or source hash (written before benchmark records carried them)."]
    lines.append("")
    return lines


def per_seed_lines(by_method: dict[str, list]) -> list[str]:
    """One row per sequence run (rows with more than one task): success on each task at its own stage (the
    success matrix's diagonal), after the last task, the final average, forgetting and r_e(K) per stage."""
    rows = []
    for method, recs in sorted(by_method.items()):
        for rec in sorted(recs, key=lambda r: (r.dataset, r.seed)):
            matrix = (rec.extra or {}).get("success_matrix") or []
            if len(matrix) < 2:
                continue
            diagonal = " ".join(f"{matrix[i][i]:.1f}" for i in range(len(matrix)))
            final = " ".join(f"{v:.1f}" for v in matrix[-1])
            ranks = ", ".join(f"{v:.1f}" for v in stage_ranks(rec.extra or {})) or "—"
            rows.append(
                f"| {method} | {rec.seed} | {diagonal} | {final} | {fmt_value(rec.metrics.get('test/avg_success'), 2)} "
                f"| {fmt_value(rec.metrics.get('test/forgetting'), 2)} | {ranks} |"
            )
    if not rows:
        return []
    return [
        "## Every sequence run",
        "",
        "Success at each task's own stage, success on each task after the last one, their mean, forgetting, and the"
        " actor's r_e(K) at each stage boundary; tasks in sequence order.",
        "",
        "| method | seed | success at own stage | success after the last task | final average | forgetting | r_e(K) "
        "per stage |",
        "|---|---|---|---|---|---|---|",
        *rows,
        "",
    ]


def rank_figure(page, path) -> bool:
    """r_e(K) at each stage boundary of the sequence rows, one line per method (mean over seeds) with each seed as
    a dot."""
    curves = {
        method: [stage_ranks(r.extra or {}) for r in recs if len((r.extra or {}).get("success_matrix") or []) > 1]
        for method, recs in sorted(_by_method(page.records).items())
    }
    curves = {m: [c for c in cs if c] for m, cs in curves.items() if any(cs)}
    if not curves:
        return False
    from zoo.utils.figures import pyplot, save_figure

    fig, ax = pyplot().subplots(figsize=(5.2, 3.4))
    for i, (method, cs) in enumerate(curves.items()):
        color = f"C{i}"
        for c in cs:
            ax.plot(range(1, len(c) + 1), c, "o", color=color, alpha=0.35, markersize=4)
        mean = _stage_mean(cs)
        if mean:
            ax.plot(range(1, len(mean) + 1), mean, "-", color=color, label=f"{method} (n={len(cs)})")
    ax.set_xlabel("stage boundary (after task k)")
    ax.set_ylabel("r_e(K), actor NTK")
    ax.set_xticks(range(1, max(len(c) for cs in curves.values() for c in cs) + 1))
    ax.legend(fontsize=7)
    save_figure(fig, path)
    return True


def _by_method(records) -> dict[str, list]:
    by_method: dict[str, list] = defaultdict(list)
    for rec in records:
        by_method[rec.method].append(rec)
    return by_method


def speed(page) -> list[str]:
    """The newest ``zoo bench sphere --leaderboard`` record's speed table and target."""
    return bench_lines(_latest_bench(page.results / "bench"), page.leaderboard)


def targets(page) -> list[str]:
    """The per-stage r_e target, judged on the success matrices' runs."""
    if not page.records:
        return []
    return [
        "## Targets judged on the success matrices",
        "",
        "Columns as in the Targets table (the same rule, `zoo.leaderboard.compare`): each boundary's r_e(K), paired "
        "by seed, Holm-corrected over the boundaries.",
        "",
        *target_lines(_by_method(page.records)),
    ]


def success_matrices(page) -> list[str]:
    """The success matrix of each (method, dataset), mean over seeds."""
    if not page.records:
        return []
    lines = ["## Success matrix (mean over seeds): row = after training on that task, column = task evaluated", ""]
    for method, recs in sorted(_by_method(page.records).items()):
        for ds in sorted({r.dataset for r in recs}):
            extras = [r.extra or {} for r in recs if r.dataset == ds]
            matrix, tasks = mean_matrix(extras), (extras[0].get("tasks") or [])
            if matrix is None:
                continue
            lines += [f"**{method}**, {ds} (n={len(extras)})", "", "| after \\ on | " + " | ".join(tasks) + " |"]
            lines.append("|---" * (len(tasks) + 1) + "|")
            lines += [f"| {tasks[i]} | " + " | ".join(f"{v:.2f}" for v in row) + " |" for i, row in enumerate(matrix)]
            lines.append("")
    return lines


def ranks(page) -> list[str]:
    """r_e(K) per stage of each (method, dataset), mean over seeds."""
    if not page.records:
        return []
    lines = ["## r_e(K) of the actor's empirical NTK at each stage boundary (mean over seeds)", ""]
    lines += ["| method | dataset | r_e per stage |", "|---|---|---|"]
    for method, recs in sorted(_by_method(page.records).items()):
        for ds in sorted({r.dataset for r in recs}):
            curve = _stage_mean([stage_ranks(r.extra or {}) for r in recs if r.dataset == ds])
            lines.append(f"| {method} | {ds} | {', '.join(f'{v:.1f}' for v in curve) or '—'} |")
    return lines


def runs(page) -> list[str]:
    """Every sequence run (``per_seed_lines``), then the expert load per task of every run's final policy."""
    by_method = _by_method(page.records)
    lines = per_seed_lines(by_method)
    routing = []
    for method, recs in sorted(by_method.items()):
        for rec in sorted(recs, key=lambda r: (r.dataset, r.seed)):
            stages = (rec.extra or {}).get("routing_by_task_eval") or []
            if not stages:
                continue
            final = {task: s["load"] for task, s in stages[-1].items()}
            loads = "; ".join(f"{t}: " + " ".join(f"{x:.2f}" for x in v) for t, v in final.items())
            routing.append(f"| {method} | {rec.seed} | {fmt_value(load_spread(final), 2)} | {loads} |")
    if routing:
        lines += [
            "",
            "## Expert load per task (final policy, evaluation states)",
            "",
            "Spread = mean total-variation distance between tasks' load vectors (0: all tasks use the experts alike;"
            " 1: disjoint experts per task).",
            "",
            "| method | seed | spread | load per task |",
            "|---|---|---|---|",
            *routing,
        ]
    return lines
