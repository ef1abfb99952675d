"""Which two benchmark rows ``zoo bench tasks`` times for a task, whether this machine can run them, and the
``zoo fit`` arguments that build them.

The pair: the task's first declared dense twin (``TaskSpec.dense_twins[0]``: MoE method, its dense twin), on the
first dataset (in ``TaskSpec.benchmark`` order) for which both have a row; each row's config and overrides, as
``zoo reproduce`` runs them, plus ``BENCH_TRAINER``: no logger, checkpoints, progress bar or sanity check, one
validation batch where the config validates, and no step or epoch limit (the step clock stops the fit).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from zoo.registry import BenchmarkRow, TaskSpec

BENCH_TRAINER = (
    "--trainer.max_epochs=1000000",
    "--trainer.max_steps=-1",
    "--trainer.limit_val_batches=1",
    "--trainer.num_sanity_val_steps=0",
)


@dataclass(frozen=True)
class TwinPair:
    """The MoE row and its dense twin's row of one task, on one dataset."""

    task: str
    moe: BenchmarkRow
    dense: BenchmarkRow

    def described(self) -> dict:
        """The pair as plain data for a record."""
        return {
            role: {"method": row.method, "dataset": row.dataset, "config": row.config, "overrides": list(row.overrides)}
            for role, row in (("moe", self.moe), ("dense", self.dense))
        }


def pair_for(spec: TaskSpec) -> TwinPair | str:
    """The task's pair (see the module doc), or one line saying why it has none."""
    if not spec.dense_twins:
        return "declares no dense twin (TaskSpec.dense_twins)"
    moe_method, dense_method = spec.dense_twins[0]
    dense_rows = {row.dataset: row for row in spec.benchmark if row.method == dense_method}
    for row in spec.benchmark:
        if row.method == moe_method and row.dataset in dense_rows:
            return TwinPair(spec.name, row, dense_rows[row.dataset])
    return f"no dataset has a benchmark row of both {moe_method!r} and its twin {dense_method!r}"


def missing_requirement(spec: TaskSpec, pair: TwinPair) -> str | None:
    """One line naming a dataset or package the pair needs that this machine lacks (from the task's conformance cases
    of the same configs, else all of its cases: the catalogue datasets and packages they declare); None when
    nothing is missing. Datasets are located, never downloaded or hashed."""
    from zoo.conformance_run import missing_requirement as case_lacks

    cases = [c for c in spec.conformance if c.config in (pair.moe.config, pair.dense.config)] or spec.conformance
    for case in cases:
        if reason := case_lacks(case):
            return reason.splitlines()[0]
    return None


def fit_args(spec: TaskSpec, row: BenchmarkRow, root: Path) -> tuple[Path, list[str]]:
    """(config file, overrides) that build ``row`` as ``zoo reproduce`` does, for a timed fit writing into ``root``."""
    return spec.config_path(row.config), [*row.overrides, *BENCH_TRAINER, f"--trainer.default_root_dir={root}"]


def task_roots(spec: TaskSpec) -> list[str]:
    """The task's modules a measurement runs (its model and datamodule classes), for the record's source hash."""
    targets = [spec.model, *spec.models.values(), *spec.datamodules.values()]
    return sorted({t.partition(":")[0] for t in targets if t})
