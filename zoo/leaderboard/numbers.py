"""How every leaderboard page writes a number (tables, targets, tuning): one rule, so a value reads the same
wherever it appears."""

from __future__ import annotations


def fmt_number(value: float, like: float | None = None) -> str:
    """Three decimals below 10 (MSE, accuracy), two below 100 (PSNR in dB, where 0.1 dB matters), one above
    (returns, seconds); ``like``: take the decimals of that value instead (a std written like its mean)."""
    scale = abs(value if like is None else like)
    return f"{value:.{3 if scale < 10 else 2 if scale < 100 else 1}f}"
