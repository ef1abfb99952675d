"""The leaderboard record of one finished fit-then-test run, with what makes it repeatable."""

from __future__ import annotations

from zoo.cli.fit_test import FitTest
from zoo.code_closure import source_hash
from zoo.leaderboard.cpu_identity import record_machine
from zoo.leaderboard.record import RunRecord
from zoo.leaderboard.versions import run_versions
from zoo.runinfo import git_commit


def record_of(
    result: FitTest,
    task: str,
    method: str,
    dataset: str,
    seed: int,
    fold: int | None,
    reduced: bool,
    note: str,
    extra: dict | None = None,
    commit: str | None = None,
) -> RunRecord:
    """The leaderboard record of one finished fit-then-test run, with what makes it repeatable: the resolved
    config, package versions, commit (``commit``, default the core checkout's: a plugin's records name their own
    project's, ``zoo.runner.task_home``), machine and the source fingerprint of the code the run executed."""
    return RunRecord(
        task=task,
        method=method,
        dataset=dataset,
        metrics=result.metrics,
        seed=seed,
        fold=fold,
        config=result.config,
        versions=run_versions(),
        wall_time_s=result.wall_time_s,
        commit=git_commit() if commit is None else commit,
        machine=record_machine(),
        reduced=reduced,
        note=note,
        extra=result.extra if extra is None else extra,
        routing=result.routing,
        # equal source hashes: made by the same code (the commit alone can be dirty or not hold it)
        source_hash=source_hash(result.config),
    )
