"""How far a re-run's metrics moved from a record's: for the log of a re-run and for ``zoo reproduce --verify``."""

from __future__ import annotations

from zoo.leaderboard.record import RunRecord


def largest_change(old: dict[str, float], new: dict[str, float]) -> tuple[str, float] | None:
    """The metric both dicts hold whose value moved most, and ``|Δ|``; None when they share no metric."""
    common = [m for m in new if m in old]
    if not common:
        return None
    worst = max(common, key=lambda m: abs(new[m] - old[m]))
    return worst, abs(new[worst] - old[worst])


def metric_change(old: RunRecord, new: RunRecord) -> str:
    """``max |Δ| = x (metric)`` over the metrics both records hold, for the log of a re-run."""
    change = largest_change(old.metrics, new.metrics)
    if change is None:
        return "no metric in common with the old record"
    return f"max |Δ| vs the old record = {change[1]:.3g} ({change[0]})"
