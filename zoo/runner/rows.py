"""A task's benchmark rows by name: ``--row`` / ``--only`` / ``--exclude`` and the rows a matrix row names."""

from __future__ import annotations

from zoo.errors import ConfigError
from zoo.registry import BenchmarkRow, TaskSpec


def find_row(spec: TaskSpec, text: str) -> BenchmarkRow:
    """The benchmark row named ``method/dataset`` (exactly, else the only row containing ``text``)."""
    names = {f"{row.method}/{row.dataset}": row for row in spec.benchmark}
    if text in names:
        return names[text]
    matches = [name for name in names if text in name]
    if len(matches) == 1:
        return names[matches[0]]
    shown = ", ".join(matches[:8] or list(names)[:8])
    raise ConfigError(
        f"--row {text!r} matches {len(matches)} rows of {spec.name}; give one 'method/dataset' of: {shown}"
        + (" ..." if len(matches or names) > 8 else "")
    )


def selected(row: str, only: list[str], exclude: list[str]) -> bool:
    """Whether ``row`` ("method/dataset") passes ``--only`` and ``--exclude``."""
    return (not only or any(s in row for s in only)) and not any(s in row for s in exclude)
