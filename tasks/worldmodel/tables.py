"""WestWorld's own leaderboard tables: rollout error vs number of pretraining robots, and the system gate per robot.

Everything else (metrics, targets, routing summary) is drawn by the generic renderer from the spec.
"""

from __future__ import annotations

from collections import defaultdict

from zoo.leaderboard.render import finite_mean, fmt_value

SCALING_METHODS = ("westworld", "dense")


def _robots(dataset: str) -> int | None:
    if dataset.startswith("scaling: "):
        return int(dataset.split()[1])
    return 12 if dataset.startswith("zero-shot") else None


def westworld_tables(records) -> str:
    """Markdown: zero-shot test/mae by number of pretraining robots (3 / 6 / 12; 12 is the zero-shot row), and the
    mean system-gate weight per robot and expert of WestWorld's zero-shot runs (last block)."""
    mae = defaultdict(list)
    gates = defaultdict(list)
    for r in records:
        n = _robots(r.dataset)
        if n is not None and r.method in SCALING_METHODS and "test/mae" in r.metrics:
            mae[(r.method, n)].append(float(r.metrics["test/mae"]))
        if r.method == "westworld" and r.dataset.startswith("zero-shot"):
            for robot, blocks in ((r.extra or {}).get("system_gate") or {}).items():
                if blocks:
                    gates[robot].append(blocks[sorted(blocks)[-1]])
    lines = ["## Scaling: zero-shot test/mae vs pretraining robots", ""]
    lines += ["| method | 3 robots | 6 robots | 12 robots |", "|---|---|---|---|"]
    for m in SCALING_METHODS:
        cells = [fmt_value(finite_mean(mae.get((m, n), []))) for n in (3, 6, 12)]
        lines.append(f"| {m} | " + " | ".join(cells) + " |")
    lines.append("")
    if gates:
        experts = max(len(g) for gs in gates.values() for g in gs)
        lines += ["## System gate per robot (WestWorld, zero-shot runs, last block, mean over seeds)", ""]
        lines += ["| robot | " + " | ".join(f"e{e}" for e in range(experts)) + " |", "|---" * (experts + 1) + "|"]
        for robot in sorted(gates):
            mean = [finite_mean([g[e] for g in gates[robot] if e < len(g)]) for e in range(experts)]
            lines.append(f"| {robot} | " + " | ".join(fmt_value(v, 2) for v in mean) + " |")
        lines.append("")
    return "\n".join(lines)
