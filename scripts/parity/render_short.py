"""The fidelity page's "Short training" section: for each comparison of ``scripts.parity.short_training``, their
code's and our metric over the same seeds side by side, from ``leaderboard/results/fidelity_training/*.json``.

The two sides share no random stream (different code draws its numbers differently), so the seeds are not matched
pairs: the difference of the means is judged with Welch's two-sample t-interval (95 %), not the paired interval the
leaderboard uses for runs of one code base. "tie" means the interval holds 0: at this budget and n, the two
implementations are not told apart; "better" / "worse" are ours against theirs in the metric's direction.
"""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path

LEVEL = 0.95
FLOAT32 = 2e-7  # relative rounding of a float32 metric (Lightning logs metrics as float32 tensors)


def load(folder: Path) -> list[dict]:
    """Every short-training record in ``folder`` (one per comparison, side and seed)."""
    return [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))] if folder.is_dir() else []


def welch(ours: list[float], theirs: list[float]) -> tuple[float, float, float] | None:
    """(mean(ours) - mean(theirs), low, high) at ``LEVEL``; None below two runs a side."""
    from scipy.stats import t

    if len(ours) < 2 or len(theirs) < 2:
        return None
    va, vb = statistics.variance(ours) / len(ours), statistics.variance(theirs) / len(theirs)
    mean_ours, mean_theirs = statistics.fmean(ours), statistics.fmean(theirs)
    diff = mean_ours - mean_theirs
    if va + vb == 0:  # deterministic on both sides: equal within float32 rounding (our logged metrics) is a tie
        diff = 0.0 if math.isclose(mean_ours, mean_theirs, rel_tol=FLOAT32, abs_tol=1e-12) else diff
        return diff, diff, diff
    dof = (va + vb) ** 2 / (va**2 / (len(ours) - 1) + vb**2 / (len(theirs) - 1))
    half = float(t.ppf(1 - (1 - LEVEL) / 2, dof)) * math.sqrt(va + vb)
    return diff, diff - half, diff + half


def verdict(interval: tuple[float, float, float] | None, higher: bool) -> str:
    if interval is None:
        return "n too small"
    _, low, high = interval
    if low <= 0 <= high:
        return "tie ="
    ours_larger = low > 0
    return "better ✓" if ours_larger == higher else "worse ✗"


def _digits(*values: float) -> int:
    """Four decimals below 10 (errors, accuracies), two below 100, one above (returns)."""
    size = max((abs(v) for v in values if math.isfinite(v)), default=0.0)
    return 4 if size < 10 else 2 if size < 100 else 1


def _spread(values: list[float]) -> str:
    if not values:
        return "—"
    mean, sd = statistics.fmean(values), statistics.stdev(values) if len(values) > 1 else 0.0
    d = _digits(mean)
    return f"{mean:.{d}f} ± {sd:.{d}f} (n={len(values)})"


def _delta(interval: tuple[float, float, float] | None, *scale: float) -> str:
    if interval is None:
        return "—"
    d = _digits(*interval, *scale)
    return "{:+.{d}f} [{:+.{d}f}, {:+.{d}f}]".format(*interval, d=d)


def section(records: list[dict], definitions: dict) -> list[str]:
    """Markdown lines of the section (empty without records)."""
    if not records:
        return []
    lines = [
        "## Short training: their code and ours side by side",
        "",
        "The authors' code (run outside the project, as their README runs it) and ours, trained on the same data "
        "with the same budget and seeds; their run's command and versions, and ours' config, source hash and "
        "versions, are in the records (`leaderboard/results/fidelity_training/`, written by "
        "`python -m scripts.parity.short_training NAME --side theirs|ours`). Δ = ours − theirs; the interval is "
        "Welch's two-sample 95 % t-interval, because the two sides share no random stream (the seeds are labels, "
        "not matched pairs). **tie**: the interval holds 0, so at this budget the two are not told apart.",
        "",
        "| comparison | task / method | upstream | metric | theirs: mean ± sd | ours: mean ± sd | Δ ours − theirs "
        "[95 % CI] | verdict |",
        "|---|---|---|---|---:|---:|---:|---|",
    ]
    notes = []
    for name in dict.fromkeys(r["comparison"] for r in records):
        spec = definitions[name]  # a record of a comparison no definition module declares is an error
        mine = [r for r in records if r["comparison"] == name]
        theirs = {r["seed"]: r["metrics"] for r in mine if r["side"] == "theirs"}
        ours = {r["seed"]: r["metrics"] for r in mine if r["side"] == "ours"}
        upstream = f"{spec.upstream}@{spec.upstream_commit[:10]}"
        for metric in spec.metrics:
            a = [ours[s][metric] for s in sorted(ours) if metric in ours[s]]
            b = [theirs[s][metric] for s in sorted(theirs) if metric in theirs[s]]
            interval = welch(a, b)
            delta = _delta(interval, *a, *b)
            judged = verdict(interval, metric in spec.higher_is_better)
            cells = [name, f"{spec.task} / {spec.method}", upstream, metric, _spread(b), _spread(a), delta, judged]
            lines.append("| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |")
        cpu = sorted({str(r.get("machine", {}).get("cpu", "?")) for r in mine})
        minutes = sum(r.get("wall_time_s", 0.0) for r in mine) / 60
        notes.append(
            f"- **{name}**: {spec.budget}. Seeds {sorted(set(theirs) | set(ours))}; {len(mine)} runs, "
            f"{minutes:.0f} min in all, on {', '.join(cpu)}."
        )
        notes += [f"  - differs: {d}" for d in spec.differences]
    return [*lines, "", *notes, ""]
