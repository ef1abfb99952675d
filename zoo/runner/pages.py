"""A task's leaderboard page and the leaderboard's index, re-rendered from the records."""

from __future__ import annotations

from pathlib import Path

from zoo.leaderboard.record import read_records
from zoo.leaderboard.render import render_index, render_task
from zoo.registry import TaskSpec


def write_pages(spec: TaskSpec, leaderboard: Path) -> Path:
    """Write ``<leaderboard>/<task>.md`` from the task's records and ``<leaderboard>/README.md``; the page's path."""
    page = leaderboard / f"{spec.name}.md"
    page.write_text(render_task(spec, read_records(spec.name, leaderboard)))
    (leaderboard / "README.md").write_text(render_index(leaderboard))
    return page
