"""``leaderboard/router_matrix.md``, re-rendered from the matrix records."""

from __future__ import annotations

from pathlib import Path

from zoo.errors import ConfigError
from zoo.leaderboard.matrix import MATRIX_TASK, read_not_applicable, render_matrix
from zoo.leaderboard.record import read_records
from zoo.registry import discover
from zoo.runner.matrix_cells import cell_is_current


def matrix_routers(records, builtin) -> list[str]:
    """The page's router columns: the built-in routers, and a plugin router only once a record of it exists (an
    installed plugin does not add an empty column to the core's page)."""
    return sorted(set(builtin) | {rec.method for rec in records if rec.method != "dense"})


def page(leaderboard: Path) -> Path:
    """Re-render ``leaderboard/router_matrix.md`` from its records. When the plugin of a task with records does not
    load, the page would show that row with no metric and every cell "not run" (seen while ``pip install -e``
    rewrote the install): it refuses instead and leaves the page as it was (the records are kept; ``zoo render
    matrix`` renders the page once the plugin loads)."""
    from zoo.moe.routers import BUILTIN_ROUTERS

    loads, records = discover(), read_records(MATRIX_TASK, leaderboard)
    with_records = {rec.dataset for rec in records}
    broken = [f"{load.name} ({load.error})" for load in loads if load.spec is None and load.name in with_records]
    if broken:
        raise ConfigError(
            f"{leaderboard / MATRIX_TASK}.md not rewritten: task plugins failed to load: {'; '.join(broken)}"
        )
    metrics, without_row, specs = {}, [], {}
    for spec in (load.spec for load in loads if load.spec is not None):
        if spec.matrix is None:
            without_row.append(spec.name)
            continue
        specs[spec.name] = spec
        if spec.metrics:
            metrics[spec.name] = (spec.metrics[0], spec.metrics[0] in spec.higher_is_better)
    notes_file = leaderboard / "notes" / f"{MATRIX_TASK}.md"
    text = render_matrix(
        records,
        metrics,
        matrix_routers(records, BUILTIN_ROUTERS),
        read_not_applicable(leaderboard),
        notes_file.read_text() if notes_file.is_file() else "",
        without_row,
        stale=lambda rec: rec.dataset in specs and not cell_is_current(specs[rec.dataset], rec),
    )
    out = leaderboard / f"{MATRIX_TASK}.md"
    out.write_text(text)
    return out
