"""The README's task table shows, per task, the MoE method against its dense twin (better / tie / worse) as the
records say it today: a column left behind by its records fails here (``python -m zoo.leaderboard.twins``
rewrites it)."""

from __future__ import annotations

from zoo.leaderboard.twins import README_COLUMN, readme_column, readme_values, with_readme_column
from zoo.registry import repository_root

TABLE = """# x

| task | domain | data |
|---|---|---|
| `a` | one | d1 |
| `b` | two | d2 |

after
"""


def test_the_readme_column_equals_the_count_from_the_records():
    shown = readme_column((repository_root() / "README.md").read_text())
    assert shown, f"README.md's task table has no column {README_COLUMN!r}"
    assert shown == readme_values()


def test_the_column_is_added_once_and_rewritten_in_place():
    added = with_readme_column(TABLE, {"a": "1 / 2 / 0", "b": "—"})
    assert f"| task | domain | data | {README_COLUMN} |" in added and "|---|---|---|---|" in added
    assert "| `a` | one | d1 | 1 / 2 / 0 |" in added and added.endswith("\nafter\n")
    assert readme_column(added) == {"a": "1 / 2 / 0", "b": "—"}
    again = with_readme_column(added, {"a": "0 / 3 / 0"})
    assert readme_column(again) == {"a": "0 / 3 / 0", "b": "—"} and again.count(README_COLUMN) == 1
    assert readme_column(TABLE) == {}  # no column yet: the check above fails on it
