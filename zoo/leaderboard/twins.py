"""Each task's MoE method against its dense twin (``TaskSpec.dense_twins``) by the pages' one rule
(``zoo.leaderboard.compare``): the summary section of a task's page and the column "vs dense twin (better / tie /
worse)" of the task table in the repository's README.md, both computed from the records.

``python -m zoo.leaderboard.twins`` rewrites that README column from the records (a test fails while it is
stale).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from zoo.leaderboard.compare import BETTER, TIE, TOO_FEW, WORSE, Comparison, compare_cells
from zoo.leaderboard.numbers import fmt_number
from zoo.leaderboard.record import RunRecord, read_records
from zoo.leaderboard.results_table import ResultTable
from zoo.registry import TaskSpec, discover, repository_root

README_COLUMN = "vs dense twin (better / tie / worse)"


@dataclass(frozen=True)
class TwinCell:
    """One dataset on which an MoE method and its dense twin both ran, compared in ``metric``."""

    method: str
    twin: str
    dataset: str
    metric: str
    comparison: Comparison


def twin_cells(spec: TaskSpec, table: ResultTable) -> list[TwinCell]:
    """Every (pair, dataset) of ``spec.dense_twins`` where both columns have runs of the task's first metric,
    paired by (seed, fold). Each cell is judged at 95 % on its own: the count is a tally of cells, not one claim."""
    if not spec.metrics:
        return []
    metric = spec.metrics[0]
    return [
        TwinCell(method, twin, ds, metric, compare_cells(table, metric, (method, ds), (twin, ds)))
        for method, twin in spec.dense_twins
        for ds in table.datasets
        if table.count(method, ds, metric) and table.count(twin, ds, metric)
    ]


def count_text(cells: Iterable[TwinCell]) -> str:
    """``better / tie / worse`` counts, e.g. ``1 / 4 / 0``, then ``; 3 n too small`` when some cells have fewer than
    3 pairs; ``—`` when no cell has both columns run."""
    outcomes = [c.comparison.outcome for c in cells]
    if not outcomes:
        return "—"
    text = " / ".join(str(outcomes.count(o)) for o in (BETTER, TIE, WORSE))
    return text + (f"; {outcomes.count(TOO_FEW)} n too small" if TOO_FEW in outcomes else "")


def twin_section(spec: TaskSpec, table: ResultTable) -> list[str]:
    """The page's summary: better / tie / worse of each MoE method against its dense twin, then every cell."""
    cells = twin_cells(spec, table)
    if not spec.dense_twins:
        return []
    pairs = ", ".join(f"{m} vs {t}" for m, t in spec.dense_twins)
    lines = [
        "## Against the dense twin",
        "",
        f"{pairs}, in {spec.metrics[0] if spec.metrics else 'no metric'}, on every dataset both ran: paired by "
        "(seed, fold), Δ = the MoE method's gain in the metric's direction with its 95 % Student-t interval, each "
        "cell on its own (the same rule as the Targets table). **better / tie / worse: "
        f"{count_text(cells)}** (the README's task table shows this count).",
        "",
    ]
    if not cells:
        return [*lines, "No dataset has runs of both yet.", ""]
    header = "| method | dense twin | dataset | method's mean | twin's mean | n | Δ [95 % CI] | outcome |"
    lines += [header, "|---" * 8 + "|"]
    for c in cells:
        means = [fmt_number(table.mean(m, c.dataset, c.metric)) for m in (c.method, c.twin)]
        lines.append(
            f"| {c.method} | {c.twin} | {c.dataset} | {means[0]} | {means[1]} | {c.comparison.n} | "
            f"{c.comparison.delta()} | {c.comparison.verdict} |"
        )
    return [*lines, ""]


def readme_value(spec: TaskSpec, records: list[RunRecord] | None = None, leaderboard: Path | None = None) -> str:
    """The README column's value for one task, from its records (read from ``leaderboard`` unless given)."""
    if records is None:
        records = read_records(spec.name, leaderboard)
    if not spec.dense_twins:
        return "no dense twin declared"
    return count_text(twin_cells(spec, ResultTable(spec.benchmark, records, spec.higher_is_better)))


def readme_values(leaderboard: Path | None = None) -> dict[str, str]:
    """Task name -> the README column's value, for every task plugin that loads."""
    return {load.name: readme_value(load.spec, leaderboard=leaderboard) for load in discover() if load.spec}


_HEADER = re.compile(r"^\| task \| domain \|")


def readme_column(text: str) -> dict[str, str]:
    """Task name -> the value of the README task table's ``README_COLUMN`` (empty when the column is missing)."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if _HEADER.match(line)), None)
    if start is None:
        return {}
    header = _cells(lines[start])
    if README_COLUMN not in header:
        return {}
    at = header.index(README_COLUMN)
    out = {}
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        cells = _cells(line)
        out[cells[0].strip("`")] = cells[at] if at < len(cells) else ""
    return out


def with_readme_column(text: str, values: Mapping[str, str]) -> str:
    """``text`` (README.md) with the task table's ``README_COLUMN`` set to ``values`` (added as the last column
    when missing); a task without a value gets ``—``."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if _HEADER.match(line))
    header = _cells(lines[start])
    at = header.index(README_COLUMN) if README_COLUMN in header else len(header)
    end = start + 2
    while end < len(lines) and lines[end].startswith("|"):
        end += 1
    for i in range(start, end):
        cells = _cells(lines[i])
        value = README_COLUMN if i == start else "---" if i == start + 1 else values.get(cells[0].strip("`"), "—")
        cells = cells[:at] + [value] + cells[at + 1 :]
        lines[i] = "|" + "---|" * len(cells) if i == start + 1 else "| " + " | ".join(cells) + " |"
    return "\n".join(lines) + ("\n" if text.endswith("\n") else "")


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def write_readme(readme: Path | None = None) -> Path:
    """Rewrite the README's column from the records."""
    path = readme or repository_root() / "README.md"
    path.write_text(with_readme_column(path.read_text(), readme_values()))
    return path


if __name__ == "__main__":
    print(write_readme())
