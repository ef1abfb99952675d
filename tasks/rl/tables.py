"""ScaleMoE's own page sections (declared in ``spec.TABLES``): speed, parameters, evaluation curve and routing of
every run.

``python -m zoo_tasks.rl.tables`` also draws every recorded evaluation curve into
``leaderboard/results/scalemoe/curves.png`` (one panel per task), which the page then shows.
"""

from __future__ import annotations

import json
from pathlib import Path

from zoo.bench.claims import NO_PROVENANCE, claim, claims_table, has_provenance, no_record, provenance_line
from zoo.leaderboard.numbers import fmt_value
from zoo.leaderboard.targets import Verdict
from zoo.utils.figures import pyplot, save_figure

SPEED_TARGET = 0.7


def speed(page) -> list[str]:
    """The newest speed benchmarks and the speed target judged on them (the record-based targets are
    ``SCALEMOE.targets``)."""
    return _bench_lines(_latest_benches(page.results / "bench"), page.results / "bench", page.leaderboard)


def runs(page) -> list[str]:
    """One row per run: env steps/s, updates/s, active/total parameters, the ``val/return`` curve."""
    if not page.records:
        return []
    lines = [
        "## Runs: speed, size, learning curve",
        "",
        "| method | task | seed | env steps/s | updates/s | actor active / total | critic active / total | "
        "val/return by env step |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for rec in sorted(page.records, key=lambda r: (r.dataset, r.method, r.seed)):
        ex = rec.extra or {}
        p = ex.get("params", {})
        curve = ", ".join(f"{s / 1000:g}k: {r:.0f}" for s, r in ex.get("eval_curve", []))
        lines.append(
            f"| {rec.method} | {rec.dataset} | {rec.seed} | {fmt_value(ex.get('env_steps_per_s'), 1)} | "
            f"{fmt_value(ex.get('updates_per_s'), 1)} | {p.get('actor_active', '—')} / {p.get('actor_total', '—')} | "
            f"{p.get('critic_active', '—')} / {p.get('critic_total', '—')} | {curve or '—'} |"
        )
    return lines


def routing(page) -> list[str]:
    """Per run and gate (actor, critic): the load entropy (1 = balanced), max/mean load and dead experts."""
    routing_lines = []
    for rec in sorted(page.records, key=lambda r: (r.dataset, r.method, r.seed)):
        for net, stats in ((rec.extra or {}).get("routing") or {}).items():
            load = ", ".join(f"{x:.2f}" for x in stats.get("training_load", []))
            routing_lines.append(
                f"| {rec.method} | {rec.dataset} | {rec.seed} | {net} | {fmt_value(stats.get('entropy'), 2)} | "
                f"{fmt_value(stats.get('load_entropy'), 2)} | {fmt_value(stats.get('max_over_mean_load'), 2)} | "
                f"{stats.get('dead_experts', '—')} | {load} |"
            )
    if not routing_lines:
        return []
    return [
        "## Routing of the MoE gates",
        "",
        "Router entropy, load entropy (1 = perfectly balanced), max/mean load and dead experts are measured on "
        "1024 replayed states at the end of training; the expert load column is accumulated over all updates.",
        "",
        "| method | task | seed | gate | router entropy | load entropy | max/mean load | dead experts | "
        "expert load over training |",
        "|---|---|---|---|---|---|---|---|---|",
        *routing_lines,
    ]


def _latest_benches(folder: Path) -> dict[int, tuple[str, dict]]:
    """The newest ``zoo bench scalemoe --leaderboard`` result per critic width in ``folder``
    (``results/scalemoe/bench/*.json``)."""
    latest: dict[int, tuple[str, dict]] = {}
    for path in sorted(folder.glob("*.json")):
        bench = json.loads(path.read_text())
        width = bench["settings"]["critic_hidden"]
        if width not in latest or bench["date"] > latest[width][1]["date"]:
            latest[width] = (path.name, bench)
    return latest


def speed_verdicts(benches: dict[int, tuple[str, dict]]) -> list[Verdict]:
    """The speed target on the newest benchmark per critic width: each ScaleMoE gating's env steps/s is at least
    ``SPEED_TARGET`` x its dense twin's, judged (``zoo.bench.claims``) on the runs of each repeat, which ran side
    by side: gain = MoE / dense - ``SPEED_TARGET``. Read from benchmark records, not metric records: the ratio needs
    the architectures timed side by side in one process. A file without commit and source hash judges nothing."""
    out = []
    for width, (_, bench) in sorted(benches.items()):
        dense = [r["env_steps_per_s"] for r in bench.get("runs", {}).get("simba", [])]
        for arch, r in bench["results"].items():
            ratio = r.get("ratio_vs_dense")
            if not arch.startswith("scalemoe") or ratio is None:
                continue
            target, where = f"{arch} env steps/s ≥ {SPEED_TARGET}x dense", f"critic width {width} (benchmark)"
            if not has_provenance(bench):
                out.append(no_record(target, where, NO_PROVENANCE, f"{ratio:.2f}x"))
                continue
            moe = [m["env_steps_per_s"] for m in bench["runs"][arch]]
            gains = [m / d - SPEED_TARGET for m, d in zip(moe, dense)]
            out.append(claim(target, where, f"{ratio:.2f}x", gains))
    return out


def _bench_lines(latest: dict[int, tuple[str, dict]], folder: Path, leaderboard: Path) -> list[str]:
    """Speed table of the newest benchmark per critic width (files in ``folder``, under ``leaderboard``)."""
    if not latest:
        return []
    lines = [
        "## Speed: environment steps per second, training included",
        "",
        "Measured side by side in one process by `zoo bench scalemoe --critic-hidden W --leaderboard` (architectures "
        f"interleaved run by run, learning phase only). Target: MoE >= {SPEED_TARGET}x dense.",
        "",
        "| critic width | architecture | env steps/s | updates/s | critic active / total params | vs dense |",
        "|---|---|---|---|---|---|",
    ]
    notes = []
    for width, (name, bench) in sorted(latest.items()):
        path = folder / name
        for arch, r in bench["results"].items():
            lines.append(
                f"| {width} | {arch} | {r['env_steps_per_s']:.1f} | {r['updates_per_s']:.1f} | "
                f"{r['critic_active']} / {r['critic_total']} | {fmt_value(r.get('ratio_vs_dense'), 2)}x |"
            )
        st = bench["settings"]
        notes.append(
            f"- critic {width}: {name}, {bench['date']}, {st['env']}, actor width {st['actor_hidden']}, batch "
            f"{st['batch_size']}, {st['num_experts']} experts top-{st['top_k']}, {st['threads']} thread(s), "
            f"median of {st['repeats']} run(s). "
            + (
                provenance_line(path, bench, leaderboard)
                if has_provenance(bench)
                else "No commit or source hash: written before benchmark records carried them."
            )
        )
    verdicts = speed_verdicts(latest)
    if verdicts:
        notes += ["", *claims_table(verdicts)]
    return lines + ["", *notes, ""]


def plot_curves(records, path) -> None:
    """One panel per task: ``val/return`` against environment steps for every recorded run."""
    plt = pyplot()
    tasks = sorted({r.dataset for r in records if r.extra.get("eval_curve")})
    fig, axes = plt.subplots(1, len(tasks), figsize=(5 * len(tasks), 3.5), squeeze=False)
    for ax, task in zip(axes[0], tasks):
        for rec in sorted((r for r in records if r.dataset == task), key=lambda r: (r.method, r.seed)):
            steps, returns = zip(*rec.extra["eval_curve"])
            ax.plot(steps, returns, marker="o", label=f"{rec.method} (seed {rec.seed})")
        ax.set(title=task, xlabel="environment steps", ylabel="mean return (10 episodes)", ylim=(0, 1000))
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    save_figure(fig, path, dpi=100)


if __name__ == "__main__":
    from zoo.leaderboard import read_records, results_dir

    out = results_dir("scalemoe") / "curves.png"
    plot_curves(read_records("scalemoe"), out)
    print(out)
