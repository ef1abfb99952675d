"""What ``zoo reproduce --rerun-stale`` / ``--reverify-only`` print: the plan, each group's decision, the time saved."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from zoo.leaderboard.record import RunRecord
from zoo.reverify.runner import RESTAMP, Plan, execute, plan


def _seconds(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.0f} min" if seconds < 7200 else f"{seconds / 3600:.1f} h"


def _runs(decision) -> str:
    group = decision.group
    count = len(group.records)
    return f"{group.label} ({count} record{'s' if count != 1 else ''})"


def plan_lines(run_plan: Plan) -> list[str]:
    """The plan: stale records and groups, the commits to probe, and the groups that cannot be probed and why."""
    stale = sum(len(d.group.records) for d in run_plan.decisions)
    probed = run_plan.probed
    head = run_plan.trees.head[:10]
    lines = [
        f"re-verify {run_plan.label}: {stale} stale records in {len(run_plan.decisions)} groups "
        f"({run_plan.current} current, {run_plan.skipped} stale that only a re-run can renew: no source hash or "
        "other settings than their row's now)"
    ]
    if probed:
        bases, fresh = len(run_plan.bases()), sum(d.remembered is None for d in probed)
        lines.append(
            f"  {fresh} probes at {bases} record commit{'s' if bases != 1 else ''} and {len(probed)} at HEAD "
            f"{head} ({bases + 1} worker processes); {len(probed) - fresh} record commits' probes remembered from "
            "their last verification on this CPU kind (probed only if HEAD's differs)"
        )
    for decision in probed:
        how = "remembered probe" if decision.remembered else "code"
        lines.append(f"  probe {_runs(decision)}: {how} of {decision.base[:10]} vs HEAD")
    for decision in run_plan.decisions:
        if decision.base is None:
            lines.append(f"  {decision.status}: {_runs(decision)}: {decision.reason}")
    return lines


def outcome_lines(run_plan: Plan) -> list[str]:
    """Each probed group's decision, then the totals and the time the re-stamped records' runs took vs the probes."""
    lines = []
    for decision in run_plan.probed:
        if decision.status == RESTAMP:
            both = "at both commits" if decision.base_probed else "at HEAD, as remembered of its commit"
            lines.append(f"  re-stamped {_runs(decision)}: probe {decision.probe_hash[:12]} {both}")
        else:
            lines.append(f"  stale {_runs(decision)}: {decision.reason}")
    restamped = run_plan.restamped()
    records = sum(len(d.group.records) for d in restamped)
    rerun = sum(len(d.group.records) for d in run_plan.decisions) - records
    saved = sum(d.group.wall_time_s for d in restamped)
    lines.append(
        f"re-verified {run_plan.label}: {records} records re-stamped ({len(restamped)} groups), {rerun} stay stale; "
        f"probes took {_seconds(run_plan.probe_seconds)}, the re-stamped records' runs took {_seconds(saved)}"
    )
    if rerun or any(w.returncode for w in run_plan.workers):
        lines.append(f"  the probe workers' logs and results: {run_plan.trees.work}")
    return lines


def reverify(
    label: str,
    records: list[tuple[Path, RunRecord]],
    repo: Path,
    eligible: Callable[[RunRecord], bool],
    dry_run: bool,
    say: Callable[[str], None] = print,
    overrides: Callable[[RunRecord], dict[str, list[str]]] = lambda _: {},
) -> Plan:
    """Plan (and unless ``dry_run`` run) the re-verification of ``records``, printing both with ``say``;
    ``overrides`` gives each group's probe overrides (``spec_overrides``)."""
    run_plan = plan(label, records, repo, eligible=eligible, overrides=overrides)
    try:
        for line in plan_lines(run_plan):
            say(line)
        if not dry_run and run_plan.probed:
            execute(run_plan, say)
            for line in outcome_lines(run_plan):
                say(line)
    finally:
        run_plan.trees.remove()
        if not run_plan.workers:
            shutil.rmtree(run_plan.trees.work, ignore_errors=True)
    return run_plan
