"""The cells of the router x task table: the tasks with a matrix row, each row's cells and runs, the ``zoo fit``
arguments of a cell's runs, and whether a record of a cell is current.

A cell is a task's matrix row run with one router (or the row's dense twin, ``"dense"``). Its records carry
``extra["cell_settings_sha256"]``, the settings fingerprint (``zoo.leaderboard.settings.settings_fingerprint``) of the
cell's arguments before its tuned values, so a record made with other matrix settings than the spec declares now
(fewer steps, another benchmark row) is told from a current one, as the benchmark pages tell a record of other
settings.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from zoo.errors import ConfigError
from zoo.leaderboard.matrix import DENSE, MATRIX_TASK
from zoo.leaderboard.provenance import written_by_current_code
from zoo.leaderboard.record import RunRecord, record_key, record_path
from zoo.leaderboard.settings import row_args, settings_fingerprint
from zoo.registry import BenchmarkRow, TaskSpec, discover
from zoo.runner.rows import find_row
from zoo.tuning.matrix_row import cell_overrides

CELL_SETTINGS = "cell_settings_sha256"


def matrix_specs(only: list[str]) -> list[TaskSpec]:
    """The tasks whose spec names a matrix row (those ``only`` names, when it names any), by name."""
    specs = [load.spec for load in discover() if load.spec is not None and load.spec.matrix is not None]
    if only:
        specs = [s for s in specs if s.name in only]
        missing = sorted(set(only) - {s.name for s in specs})
        if missing:
            raise ConfigError(f"--only {', '.join(missing)}: no such task with a matrix row")
    return sorted(specs, key=lambda s: s.name)


def cells(spec: TaskSpec, routers: list[str]) -> Iterator[tuple[str, BenchmarkRow, str | None]]:
    """(label, benchmark row, router) of every cell of ``spec``'s matrix row: the dense twin, then each router."""
    matrix = spec.matrix
    yield DENSE, find_row(spec, matrix.dense), None
    moe = find_row(spec, matrix.row)
    for router in routers:
        yield router, moe, router


def cell_runs(spec: TaskSpec, row: BenchmarkRow) -> list[tuple[int, int | None]]:
    """The (seed, fold) of every run of one cell of ``row``."""
    folds = range(row.folds) if row.folds else [None]
    return [(seed, fold) for seed in spec.matrix.seeds for fold in folds]


def cell_record_path(spec: TaskSpec, label: str, seed: int, fold: int | None, leaderboard: Path) -> Path:
    """The record file of one run of cell ``label``."""
    return record_path(MATRIX_TASK, record_key(label, spec.name, seed, fold), leaderboard)


def cell_row(spec: TaskSpec, label: str) -> tuple[BenchmarkRow, str | None]:
    """(benchmark row, router) of the cell ``label`` (``"dense"`` or a router name) of ``spec``'s matrix row."""
    if label == DENSE:
        return find_row(spec, spec.matrix.dense), None
    return find_row(spec, spec.matrix.row), label


def cell_args(spec: TaskSpec, label: str, seed: int, fold: int | None) -> list[str]:
    """The ``zoo fit`` arguments of one run of a cell, before its tuned values: the benchmark row's, the matrix
    settings (``cell_overrides``) and the router."""
    row, router = cell_row(spec, label)
    args = [*row_args(spec, row, seed, fold, quick=False), *cell_overrides(spec.matrix, router)]
    if router is not None:
        args.append(f"--{spec.router_arg}.router={router}")
    return args


def cell_is_current(spec: TaskSpec, record: RunRecord) -> bool:
    """Whether ``record`` was written by the code installed now (``written_by_current_code``) with its cell's
    current settings; a record from before cell settings were stored is judged by its code alone."""
    return written_by_current_code(record) is True and cell_settings_current(spec, record)


def cell_settings_current(spec: TaskSpec, record: RunRecord) -> bool:
    """Whether ``record`` ran with its cell's current settings (True for a record from before they were stored)."""
    recorded = (record.extra or {}).get(CELL_SETTINGS)
    if recorded is None:
        return True
    try:
        return recorded == settings_fingerprint(cell_args(spec, record.method, record.seed, record.fold))
    except ConfigError:  # the spec's matrix row no longer names that row
        return False
