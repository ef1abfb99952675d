"""Which stale records one probe answers for: records of one task that ran the same closure, with the same config
except their seed and fold, on the same number of torch threads (see the package docstring for why such a group
cannot hide a change)."""

from __future__ import annotations

import copy
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from zoo.leaderboard.record import RunRecord

# Config keys that differ between the records of one row without changing the code path: the run's seed, its
# fold and its run folder. Everything else of the resolved config must be equal for two records to share a probe.
PER_RUN_KEYS = (("seed_everything",), ("data", "init_args", "fold"), ("trainer", "default_root_dir"))


def row_config(config: dict) -> dict:
    """The record's resolved config without its per-run keys (``PER_RUN_KEYS``)."""
    row = copy.deepcopy(config or {})
    for path in PER_RUN_KEYS:
        node = row
        for part in path[:-1]:
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, dict):
            node.pop(path[-1], None)
    return row


def threads_of(record: RunRecord) -> int | None:
    """The torch thread count the record's run used (its ``machine.torch_threads``), None when it does not say."""
    threads = (record.machine or {}).get("torch_threads")
    return int(threads) if threads else None


def base_commits(record: RunRecord) -> list[str]:
    """Commits whose tree may hold the code that wrote the record's ``source_hash``: the commit of its last
    re-verification (a re-stamped record's hash is that commit's), then the commit it was run at."""
    found = [entry.get("to_commit", "") for entry in reversed(getattr(record, "verified", None) or [])]
    found.append(record.commit or "")
    out = []
    for commit in (c.removesuffix("+dirty") for c in found):
        if commit and commit not in out:
            out.append(commit)
    return out


@dataclass
class Group:
    """Stale records that one probe answers for.

    ``config`` is the first record's full config (its seed is the probe's); ``runs`` every (seed, fold) of the
    group, whose data splits the probe fingerprints; ``paths`` the record files; ``overrides`` what the probe's
    short fit adds to the config."""

    task: str
    source_hash: str
    threads: int | None
    config: dict
    records: list[RunRecord] = field(default_factory=list)
    paths: list[Path] = field(default_factory=list)
    overrides: tuple[str, ...] = ()  # the task's probe overrides of the short fit (TaskSpec.probe_overrides)
    inputs: tuple[str, ...] = ()  # ... and of every part of the probe (stand-ins for another run's outputs)

    @property
    def key(self) -> str:
        """A short, stable id of the group (task, source hash, threads, row config and probe overrides)."""
        text = json.dumps([self.task, self.source_hash, self.threads, row_config(self.config)], sort_keys=True)
        if self.overrides or self.inputs:
            text += json.dumps([list(self.overrides), list(self.inputs)])
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    @property
    def label(self) -> str:
        first = self.records[0]
        return f"{first.method}/{first.dataset}"

    @property
    def runs(self) -> list[tuple[int, int | None]]:
        return sorted({(r.seed, r.fold) for r in self.records}, key=lambda sf: (sf[0], -1 if sf[1] is None else sf[1]))

    @property
    def seed(self) -> int:
        return self.records[0].seed

    @property
    def wall_time_s(self) -> float:
        return sum(r.wall_time_s or 0.0 for r in self.records)

    def commits(self) -> list[str]:
        """Candidate base commits of the group, most records first."""
        counts: dict[str, int] = {}
        for record in self.records:
            for commit in base_commits(record):
                counts[commit] = counts.get(commit, 0) + 1
        return sorted(counts, key=lambda c: -counts[c])


def group_records(task: str, records: list[tuple[Path, RunRecord]]) -> list[Group]:
    """Group ``(path, record)`` pairs by (source hash, torch threads, row config), in the records' order."""
    groups: dict[str, Group] = {}
    for path, record in records:
        key = json.dumps([record.source_hash, threads_of(record), row_config(record.config)], sort_keys=True)
        group = groups.get(key)
        if group is None:
            group = groups[key] = Group(task, record.source_hash, threads_of(record), record.config)
        group.records.append(record)
        group.paths.append(path)
    for group in groups.values():  # the probe runs the lowest (seed, fold), whatever order the files came in
        order = sorted(range(len(group.records)), key=lambda i: _run_order(group.records[i]))
        group.records = [group.records[i] for i in order]
        group.paths = [group.paths[i] for i in order]
        group.config = group.records[0].config
    return list(groups.values())


def _run_order(record: RunRecord) -> tuple[int, int]:
    return record.seed, -1 if record.fold is None else record.fold
