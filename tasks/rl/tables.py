"""Extra leaderboard tables for ScaleMoE: speed, parameters, evaluation curve and routing of every run.

``python -m zoo_tasks.rl.tables`` also draws every recorded evaluation curve into
``leaderboard/results/scalemoe/curves.png`` (one panel per task), which the page then shows.
"""

from __future__ import annotations

import json

from zoo.leaderboard.record import results_dir
from zoo.leaderboard.render import finite_mean, fmt_value
from zoo_tasks.rl.spec import DENSE_TWIN, METHODS, PUBLISHED_SIMBA

MOE_METHODS = tuple(m for m in METHODS if m.startswith("ScaleMoE"))
SPEED_TARGET, FAITHFUL_WITHIN = 0.7, 0.10


def scalemoe_tables(records) -> str:
    """Markdown: the issue's targets judged on the records and the newest benchmarks; one row per run with env
    steps/s, updates/s, active/total parameters, the ``val/return`` curve; and per gate (actor, critic) the load
    entropy (1 = balanced), max/mean load and dead experts."""
    benches = _latest_benches()
    lines = _target_lines(records, benches) + _bench_lines(benches)
    if (results_dir("scalemoe") / "curves.png").exists():
        lines += ["## Learning curves", "", "![val/return vs environment steps](results/scalemoe/curves.png)", ""]
    if not records:
        return "\n".join(lines) + "\n" if lines else ""
    lines += [
        "## Runs: speed, size, learning curve",
        "",
        "| method | task | seed | env steps/s | updates/s | actor active / total | critic active / total | "
        "val/return by env step |",
        "|---|---|---|---|---|---|---|---|",
    ]
    routing_lines = []
    for rec in sorted(records, key=lambda r: (r.dataset, r.method, r.seed)):
        ex = rec.extra or {}
        p = ex.get("params", {})
        curve = ", ".join(f"{s / 1000:g}k: {r:.0f}" for s, r in ex.get("eval_curve", []))
        lines.append(
            f"| {rec.method} | {rec.dataset} | {rec.seed} | {fmt_value(ex.get('env_steps_per_s'), 1)} | "
            f"{fmt_value(ex.get('updates_per_s'), 1)} | {p.get('actor_active', '—')} / {p.get('actor_total', '—')} | "
            f"{p.get('critic_active', '—')} / {p.get('critic_total', '—')} | {curve or '—'} |"
        )
        for net, stats in (ex.get("routing") or {}).items():
            load = ", ".join(f"{x:.2f}" for x in stats.get("training_load", []))
            routing_lines.append(
                f"| {rec.method} | {rec.dataset} | {rec.seed} | {net} | {fmt_value(stats.get('entropy'), 2)} | "
                f"{fmt_value(stats.get('load_entropy'), 2)} | {fmt_value(stats.get('max_over_mean_load'), 2)} | "
                f"{stats.get('dead_experts', '—')} | {load} |"
            )
    if routing_lines:
        lines += [
            "",
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
    return "\n".join(lines) + "\n"


def _latest_benches() -> dict[int, tuple[str, dict]]:
    """The newest ``python -m zoo_tasks.rl.bench`` result per critic width (``results/scalemoe/bench/*.json``)."""
    latest: dict[int, tuple[str, dict]] = {}
    for path in sorted((results_dir("scalemoe") / "bench").glob("*.json")):
        bench = json.loads(path.read_text())
        width = bench["settings"]["critic_hidden"]
        if width not in latest or bench["date"] > latest[width][1]["date"]:
            latest[width] = (path.name, bench)
    return latest


def _mean_return(records, method: str, dataset: str) -> tuple[float, int] | None:
    """(mean test/return over seeds, number of seeds), or None when the cell has no run."""
    values = [r.metrics.get("test/return") for r in records if r.method == method and r.dataset == dataset]
    return (finite_mean(values), len(values)) if values else None


def _target_lines(records, benches: dict[int, tuple[str, dict]]) -> list[str]:
    """The issue's three targets, one row per (target, task): the dense twin within 10% of the published SimBa
    return at 50k, each ScaleMoE gating >= its dense twin (means over seeds), and MoE env steps/s >= 0.7x dense."""
    rows = []
    for dataset in sorted({r.dataset for r in records if r.method == DENSE_TWIN}):
        env = dataset.split(" @")[0]
        dense = _mean_return(records, DENSE_TWIN, dataset)
        if env in PUBLISHED_SIMBA and dense:
            published = PUBLISHED_SIMBA[env][0]
            gap = dense[0] / published - 1
            ok = "✓" if gap >= -FAITHFUL_WITHIN else "✗"
            rows.append(
                f"| dense twin within {FAITHFUL_WITHIN:.0%} of published SimBa | {dataset} | "
                f"{dense[0]:.1f} (n={dense[1]}) vs {published:.0f} ({gap:+.0%}) | {ok} |"
            )
        for method in MOE_METHODS:
            moe = _mean_return(records, method, dataset)
            if moe and dense:
                ok = "✓" if moe[0] >= dense[0] else "✗"
                rows.append(
                    f"| {method} >= dense twin | {dataset} | {moe[0]:.1f} (n={moe[1]}) vs {dense[0]:.1f} "
                    f"(n={dense[1]}) | {ok} |"
                )
    for width, (_, bench) in sorted(benches.items()):
        for arch, r in bench["results"].items():
            ratio = r.get("ratio_vs_dense")
            if arch.startswith("scalemoe") and ratio is not None:
                ok = "✓" if ratio >= SPEED_TARGET else "✗"
                rows.append(
                    f"| {arch} env steps/s >= {SPEED_TARGET}x dense | critic width {width} (benchmark) | "
                    f"{ratio:.2f}x | {ok} |"
                )
    if not rows:
        return []
    return [
        "## Targets",
        "",
        "Judged on the means over seeds in the table above and on the newest speed benchmark below. The seeds of one "
        "cell spread widely (see the runs table), so a ✓ or ✗ from 3 seeds is a weak verdict either way.",
        "",
        "| target | task | ours | met |",
        "|---|---|---|---|",
        *rows,
        "",
    ]


def _bench_lines(latest: dict[int, tuple[str, dict]]) -> list[str]:
    """Speed table of the newest benchmark per critic width."""
    if not latest:
        return []
    lines = [
        "## Speed: environment steps per second, training included",
        "",
        "Measured side by side in one process by `python -m zoo_tasks.rl.bench --critic-hidden W` (architectures "
        "interleaved run by run, learning phase only). Target: MoE >= 0.7x dense.",
        "",
        "| critic width | architecture | env steps/s | updates/s | critic active / total params | vs dense |",
        "|---|---|---|---|---|---|",
    ]
    notes = []
    for width, (name, bench) in sorted(latest.items()):
        for arch, r in bench["results"].items():
            lines.append(
                f"| {width} | {arch} | {r['env_steps_per_s']:.1f} | {r['updates_per_s']:.1f} | "
                f"{r['critic_active']} / {r['critic_total']} | {fmt_value(r.get('ratio_vs_dense'), 2)}x |"
            )
        st = bench["settings"]
        notes.append(
            f"- critic {width}: {name}, {bench['date']}, {st['env']}, actor width {st['actor_hidden']}, batch "
            f"{st['batch_size']}, {st['num_experts']} experts top-{st['top_k']}, {st['threads']} thread(s), "
            f"median of {st['repeats']} run(s)"
        )
    return lines + ["", *notes, ""]


def plot_curves(records, path) -> None:
    """One panel per task: ``val/return`` against environment steps for every recorded run."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tasks = sorted({r.dataset for r in records if r.extra.get("eval_curve")})
    fig, axes = plt.subplots(1, len(tasks), figsize=(5 * len(tasks), 3.5), squeeze=False)
    for ax, task in zip(axes[0], tasks):
        for rec in sorted((r for r in records if r.dataset == task), key=lambda r: (r.method, r.seed)):
            steps, returns = zip(*rec.extra["eval_curve"])
            ax.plot(steps, returns, marker="o", label=f"{rec.method} (seed {rec.seed})")
        ax.set(title=task, xlabel="environment steps", ylabel="mean return (10 episodes)", ylim=(0, 1000))
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


if __name__ == "__main__":
    from zoo.leaderboard.record import read_records

    out = results_dir("scalemoe") / "curves.png"
    plot_curves(read_records("scalemoe"), out)
    print(out)
