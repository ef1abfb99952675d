"""The one renderer of a task's declared tables and figures (``zoo.leaderboard.tables``): :func:`draw_tables` turns
what ``TaskSpec.extra_tables`` names into the markdown its page shows after the generic sections."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from pathlib import Path

from zoo.leaderboard.example_plots import example_plot_lines
from zoo.leaderboard.numbers import finite_mean, fmt_value
from zoo.leaderboard.record import RunRecord
from zoo.leaderboard.tables import Column, Examples, Image, Page, Plot, Section, Table, field
from zoo.registry import TaskSpec, load_object


def draw_tables(
    spec: TaskSpec,
    records: Iterable[RunRecord],
    leaderboard: Path | None = None,
    current: Callable[[RunRecord], bool] | None = None,
) -> str:
    """The markdown of the task's declared tables and figures, in order ("" when it declares none): one blank line
    between two, none between figures in a row. Figures are drawn under ``<leaderboard>/results/<task>/`` (default:
    this checkout's ``leaderboard``); ``current`` is the page's test for an unmarked record (default
    ``zoo.leaderboard.settings.is_current``). A plugin's ``extra_tables`` may still name ``fn(records) -> str``."""
    records = list(records)
    if not spec.extra_tables:
        return ""
    declared = load_object(spec.extra_tables)
    if callable(declared):
        return declared(records)
    page = Page.of(spec, records, leaderboard, current)
    lines: list[str] = []
    previous = None
    for item in declared:
        drawn = _trimmed(DRAWERS[type(item)](item, page))
        if not drawn:
            continue
        if lines and not (isinstance(item, Plot) and isinstance(previous, Plot)):
            lines.append("")
        lines += drawn
        previous = item
    return "\n".join(lines)


def _trimmed(lines: list[str]) -> list[str]:
    """``lines`` without the blank lines around them."""
    start, end = 0, len(lines)
    while start < end and not lines[start]:
        start += 1
    while end > start and not lines[end - 1]:
        end -= 1
    return lines[start:end]


def draw_table(table: Table, page: Page) -> list[str]:
    """A :class:`Table`: a row per group of the records, cells the means of its columns' values."""
    groups: dict[tuple[str, ...], list[RunRecord]] = defaultdict(list)
    for record in page.records:
        if not table.methods or record.method in table.methods:
            groups[tuple(_name(field(record, f)) for f in table.rows)].append(record)
    rows = []
    for key in _ordered(table, list(groups), page):
        cells = _cells(table.columns, groups[key])
        if cells:
            rows.append("| " + " | ".join([*key, *cells]) + " |")
    if not rows:
        return []
    header = [f.rpartition(".")[2] for f in table.rows] + [c.header for c in table.columns]
    note = [table.note, ""] if table.note else []
    return [f"## {table.title}", "", *note, "| " + " | ".join(header) + " |", "|" + "---|" * len(header), *rows]


def _name(value) -> str:
    return "?" if value is None else str(value)


def _ordered(table: Table, keys: list[tuple[str, ...]], page: Page) -> list[tuple[str, ...]]:
    """The row names sorted, or (``order="benchmark"``) methods and datasets in the page's order."""
    if table.order == "sorted":
        return sorted(keys)
    orders = {"method": page.table.methods, "dataset": page.table.datasets}

    def rank(key: tuple[str, ...]) -> tuple:
        ranks = []
        for name, value in zip(table.rows, key):
            order = orders.get(name, [])
            ranks.append((order.index(value), "") if value in order else (len(order), value))
        return tuple(ranks)

    return sorted(keys, key=rank)


def _cells(columns: tuple[Column, ...], records: list[RunRecord]) -> list[str]:
    """The row's cells; none when no record gives a column a value."""
    values = {c: [_value(c, r) for r in records] for c in columns if c.path}
    giving = sum(any(v[i] is not None for v in values.values()) for i in range(len(records)))
    if not giving:
        return []
    cells = []
    for c in columns:
        if not c.path:
            cells.append(str(giving))
            continue
        cells.append(fmt_value(finite_mean(values[c]), c.digits))
    return cells


def _value(column: Column, record: RunRecord):
    if column.datasets and record.dataset not in column.datasets:
        return None
    return field(record, column.path)


def draw_plot(plot: Plot, page: Page) -> list[str]:
    """A :class:`Plot`, drawn into ``results/<task>/figures/`` where the results folder exists."""
    if not page.results.is_dir() or not load_object(plot.draw)(page, page.results / "figures" / plot.file):
        return []
    return [f"![{plot.alt}](results/{page.spec.name}/figures/{plot.file})"]


def draw_image(image: Image, page: Page) -> list[str]:
    """An :class:`Image`, once its file exists."""
    if not (page.results / image.file).exists():
        return []
    heading = [f"## {image.heading}", ""] if image.heading else []
    return [*heading, f"![{image.alt}](results/{page.spec.name}/{image.file})"]


def draw_examples(examples: Examples, page: Page) -> list[str]:
    """The :class:`Examples` figures of ``results/<task>/plots/``."""
    return example_plot_lines(page.spec.name, examples.heading or None, page.results, examples.pattern)


def draw_section(section: Section, page: Page) -> list[str]:
    """A :class:`Section`'s lines, from its task function."""
    return list(load_object(section.function)(page) or [])


DRAWERS = {Table: draw_table, Plot: draw_plot, Image: draw_image, Examples: draw_examples, Section: draw_section}
