"""A benchmark row's settings, and whether a record ran with the ones the spec declares now.

The source fingerprint (``zoo.code_closure``) says which code a run executed; it does not cover the row's
YAML config or its overrides. A record therefore also carries ``extra["settings_sha256"]``: a hash of the row's
``zoo fit`` arguments with every ``--config`` file replaced by the hash of its contents (so the same settings hash
the same from any checkout or install path). A record whose hash differs from its row's today ran with other
settings: the page marks it like a record of other code, and ``zoo reproduce --rerun-stale`` re-runs it. A record
written before that hash existed is compared through its resolved config instead: each of the row's ``--key value``
overrides against the value the record's config holds at ``key`` (edits inside a config file cannot be seen so).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from pathlib import Path

import yaml

from zoo.leaderboard.provenance import written_by_current_code
from zoo.leaderboard.record import RunRecord
from zoo.registry import BenchmarkRow, TaskSpec

SETTINGS_KEY = "settings_sha256"


def row_args(spec: TaskSpec, row: BenchmarkRow, seed: int, fold: int | None, quick: bool) -> list[str]:
    """The ``zoo fit`` arguments of one (row, seed, fold)."""
    args = [
        "--config",
        str(spec.config_path(row.config)),
        *row.overrides,
        *(row.quick_overrides if quick else ()),
        "--seed_everything",
        str(seed),
    ]
    if fold is not None:
        args += ["--data.init_args.fold", str(fold)]
    return args


def settings_fingerprint(args: Sequence[str]) -> str:
    """sha256 of ``zoo fit`` arguments, each ``--config`` file replaced by the sha256 of its bytes."""
    parts, after_config = [], False
    for arg in args:
        if after_config and Path(arg).is_file():
            arg = "config-sha256:" + hashlib.sha256(Path(arg).read_bytes()).hexdigest()
        after_config = arg == "--config"
        parts.append(arg)
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()


def _same(value: object, recorded: object) -> bool:
    numbers = all(isinstance(v, int | float) and not isinstance(v, bool) for v in (value, recorded))
    return math.isclose(value, recorded, rel_tol=1e-12) if numbers else value == recorded  # type: ignore[arg-type]


def overrides_differ(config: dict, args: Sequence[str]) -> bool:
    """Whether one of the ``--key value`` pairs in ``args`` (``--config`` aside) names a value that ``config`` (a
    record's resolved config) holds otherwise at that dotted key; keys the config lacks are not evidence."""
    for flag, text in zip(args[::2], args[1::2], strict=False):
        if not flag.startswith("--") or flag == "--config":
            continue
        node: object = config
        for part in flag[2:].split("."):
            if not isinstance(node, dict) or part not in node:
                break
            node = node[part]
        else:
            if not _same(yaml.safe_load(text), node):
                return True
    return False


def row_of(spec: TaskSpec, record: RunRecord) -> BenchmarkRow | None:
    """The benchmark row that ``record`` belongs to (same method and dataset), None when the row is gone."""
    return next((r for r in spec.benchmark if r.method == record.method and r.dataset == record.dataset), None)


def settings_changed(spec: TaskSpec, record: RunRecord) -> bool:
    """Whether ``record`` ran with other settings than its row declares now: its settings hash differs, or (a record
    from before the hash) one of the row's overrides differs from its resolved config. False when its row is gone."""
    recorded = (record.extra or {}).get(SETTINGS_KEY)
    if not recorded and not record.config:
        return False  # nothing to compare
    row = row_of(spec, record)
    if row is None:
        return False
    args = row_args(spec, row, record.seed, record.fold, quick=False)
    return recorded != settings_fingerprint(args) if recorded else overrides_differ(record.config, args)


def is_current(spec: TaskSpec, record: RunRecord) -> bool:
    """Written by the current code (``written_by_current_code``) with its row's current settings: what a page
    leaves unmarked and ``zoo reproduce --rerun-stale`` leaves alone."""
    return written_by_current_code(record) is True and not settings_changed(spec, record)
