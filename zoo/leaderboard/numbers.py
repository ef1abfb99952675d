"""How every leaderboard page writes a number (tables, targets, tuning): one rule, so a value reads the same
wherever it appears."""

from __future__ import annotations

import math
import statistics


def fmt_number(value: float, like: float | None = None) -> str:
    """Three decimals below 10 (MSE, accuracy), two below 100 (PSNR in dB, where 0.1 dB matters), one above
    (returns, seconds); ``like``: take the decimals of that value instead (a std written like its mean)."""
    scale = abs(value if like is None else like)
    return f"{value:.{3 if scale < 10 else 2 if scale < 100 else 1}f}"


def finite_mean(values) -> float:
    """Mean of the values that are neither None nor NaN; NaN when none is left."""
    values = [v for v in values if v is not None and not math.isnan(v)]
    return statistics.fmean(values) if values else math.nan


def fmt_value(value: float | None, digits: int = 3) -> str:
    """A fixed-decimals number, or ``—`` for a missing (None / NaN) one."""
    return "—" if value is None or math.isnan(value) else f"{value:.{digits}f}"
