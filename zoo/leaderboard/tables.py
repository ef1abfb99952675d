"""A task's own tables and figures on its leaderboard page, declared as data (issue 58).

A task lists them in a tuple that ``TaskSpec.extra_tables`` names (``"my_package.spec:TABLES"``); one renderer,
``zoo.leaderboard.draw``, draws them after the generic sections, in order, one blank line between two (figures in a
row share a paragraph). The kinds:

- :class:`Table`: a pivot of the records: a row per group of records (``rows``: the record fields naming it), a
  :class:`Column` per value read from each record, averaged over the group.
- :class:`Plot`: a figure a task function draws from the records into ``results/<task>/figures/``, shown there.
- :class:`Image`: a figure file under ``results/<task>/`` (drawn by hand), shown when it exists.
- :class:`Examples`: the run figures copied into ``results/<task>/plots/`` (``zoo.leaderboard.example_plots``).
- :class:`Section`: lines a task function writes from the :class:`Page`, for what the kinds above cannot say (a
  benchmark claim, a layout of the task's own).

Task functions are named by dotted path (``"package.module:function"``), so a spec imports nothing heavy. They read
the page's records from the :class:`Page` they are given and write numbers with ``zoo.leaderboard.numbers``; no task
imports the renderer.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from zoo.leaderboard.record import RunRecord
from zoo.leaderboard.results_table import ResultTable
from zoo.leaderboard.settings import is_current
from zoo.registry import TaskSpec, repository_root

__all__ = ["Column", "Examples", "Image", "Page", "Plot", "Section", "Table", "field"]


@dataclass(frozen=True)
class Column:
    """A column of a :class:`Table`: its ``header`` and the record field it averages over a row's records (see
    :func:`field`; finite values only), written with ``digits`` decimals, ``—`` where none is left.

    ``datasets``: read only the records of these datasets (every dataset when empty). ``path=""`` makes a count
    column: the row's records that give any other column a value (a ``runs`` column).
    """

    header: str
    path: str = ""
    digits: int = 3
    datasets: tuple[str, ...] = ()


@dataclass(frozen=True)
class Table:
    """A pivot of a task's records: ``## title``, the ``note`` paragraph, then one row per group of records.

    Attributes:
        title: the section heading.
        columns: the :class:`Column` s after the row's name.
        rows: the record fields (see :func:`field`) whose values name a row, one column each (headed by the field's
            last part: ``"extra.student"`` -> ``student``); a record without one is grouped under ``?``.
        note: a paragraph between the heading and the table ("" for none).
        methods: only records of these methods (every method when empty).
        order: ``"sorted"`` (rows by their names) or ``"benchmark"`` (methods and datasets in the page's order).

    Only groups whose records give a column a value are rows; a table without rows is not drawn.
    """

    title: str
    columns: tuple[Column, ...]
    rows: tuple[str, ...] = ("dataset", "method")
    note: str = ""
    methods: tuple[str, ...] = ()
    order: str = "sorted"


@dataclass(frozen=True)
class Plot:
    """A figure drawn from the records: ``draw`` (``"package.module:function"``, called ``fn(page, path) -> bool``)
    draws it into ``results/<task>/figures/<file>`` and says whether it had anything to draw; the page shows it as
    ``![alt](...)``. Drawn only where the task's results folder exists (a checkout that holds its records)."""

    alt: str
    file: str
    draw: str


@dataclass(frozen=True)
class Image:
    """A figure file under ``results/<task>/`` that a command run by hand draws (``python -m <task>.tables``),
    shown under ``## heading`` (none when "") once it exists."""

    alt: str
    file: str
    heading: str = ""


@dataclass(frozen=True)
class Examples:
    """The figures matching ``pattern`` in ``results/<task>/plots/`` (run figures copied there by hand, see
    ``zoo.leaderboard.example_plots``), under ``## heading`` (none when "")."""

    heading: str = ""
    pattern: str = "*.png"


@dataclass(frozen=True)
class Section:
    """Markdown lines from a task's own function: ``function`` (``"package.module:function"``) is called with the
    :class:`Page` and returns the lines (none for no section)."""

    function: str


@dataclass(frozen=True)
class Page:
    """What a task function is given: the task's ``spec``, its ``records``, the records by cell (``table``, a
    ``zoo.leaderboard.results_table.ResultTable`` in the benchmark's order) and the ``leaderboard`` folder the page
    is rendered into; ``current(record)`` is the page's test for leaving a record unmarked (``°`` otherwise)."""

    spec: TaskSpec
    records: list[RunRecord]
    table: ResultTable
    leaderboard: Path
    current: Callable[[RunRecord], bool]

    @classmethod
    def of(
        cls,
        spec: TaskSpec,
        records: Iterable[RunRecord],
        leaderboard: Path | None = None,
        current: Callable[[RunRecord], bool] | None = None,
    ) -> Page:
        """The page of ``records`` in ``leaderboard`` (default: this checkout's); ``current`` defaults to the
        generic tables' test (``zoo.leaderboard.settings.is_current``)."""
        records = list(records)
        table = ResultTable(spec.benchmark, records, spec.higher_is_better)
        folder = leaderboard or repository_root() / "leaderboard"
        return cls(spec, records, table, folder, current or (lambda record: is_current(spec, record)))

    @property
    def results(self) -> Path:
        """``<leaderboard>/results/<task>``: the task's records, benchmark files and figures."""
        return self.leaderboard / "results" / self.spec.name


def field(record: RunRecord, path: str):
    """The value at ``path`` in a record, None where it is missing: ``"dataset"`` (an attribute),
    ``"metrics.test/mse"`` (a metric, named whole), ``"extra.diagnostics.homogeneity"`` (keys into ``extra``)."""
    name, _, rest = path.partition(".")
    value = getattr(record, name, None)
    for key in ([rest] if name == "metrics" else rest.split(".")) if rest else ():
        value = value.get(key) if isinstance(value, dict) else None
    return value
