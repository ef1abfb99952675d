"""What a grid's run folder says about the run in it, for ``zoo reproduce`` and ``zoo reproduce matrix``: which
record a re-run replaces (``mark_rerun``), whether the folder still holds the old run (``holds_old_run``), and which
code and settings started it (``set_aside_other_code``). A folder whose checkpoint must not be resumed is moved
aside, never deleted."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import yaml

from zoo.cli.fit_test import last_checkpoint
from zoo.code_closure import source_hash
from zoo.data.resolve import sha256_of
from zoo.leaderboard.settings import settings_fingerprint
from zoo.runner.run_lock import LOCK_NAME

REPLACES = "replaces.json"
RUN_CODE = "run_code.json"


def mark_rerun(run_dir: Path, record_file: Path) -> None:
    """Write into ``run_dir`` which record its run replaces (the record file's sha256), so that a killed re-run
    is told from the old run by content, not by file times (a checkout or a copy renews a record's mtime)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / REPLACES).write_text(json.dumps({"record": record_file.name, "sha256": sha256_of(record_file)}) + "\n")


def holds_old_run(run_dir: Path, record_file: Path) -> bool:
    """Whether ``run_dir``'s ``last.ckpt`` is the stale record's own run (to set aside), not a killed re-run (to
    resume). A re-run's folder names the record it replaces (``mark_rerun``); a folder without that mark (a first
    run, or a re-run started before marks were written) counts as the old run when its checkpoint is older than
    the record file."""
    ckpt = last_checkpoint(run_dir)
    if not ckpt.exists() or not record_file.exists():
        return False
    mark = run_dir / REPLACES
    if mark.exists():
        return json.loads(mark.read_text()).get("sha256") != sha256_of(record_file)
    return ckpt.stat().st_mtime <= record_file.stat().st_mtime


def set_aside_old_run(run_dir: Path, record_file: Path) -> Path | None:
    """Before re-running a stale record's row: when ``run_dir`` holds the old run (``holds_old_run``; resuming
    it would test the old weights), everything in it but the run lock moves to ``<key>.replaced-<n>``; the lock
    stays, held, so no other process takes the row meanwhile. Returns the new folder, or None when nothing moved."""
    return move_aside(run_dir) if holds_old_run(run_dir, record_file) else None


def move_aside(run_dir: Path) -> Path:
    """Move everything in ``run_dir`` but its run lock (which stays, held) to ``<name>.replaced-<n>``."""
    n = 0
    while (target := run_dir.with_name(f"{run_dir.name}.replaced-{n}")).exists():
        n += 1
    target.mkdir()
    for child in run_dir.iterdir():
        if child.name != LOCK_NAME:
            child.rename(target / child.name)
    return target


def code_and_settings(args: Sequence[str]) -> dict[str, str]:
    """What must not change under a killed run's checkpoint for it to be resumed: the source hash of the code its
    ``--config`` files name (``zoo.code_closure``, from their ``class_path`` entries) and the settings fingerprint of
    its ``zoo fit`` arguments."""
    configs = [yaml.safe_load(Path(path).read_text()) for flag, path in zip(args, args[1:]) if flag == "--config"]
    return {"source_hash": source_hash({"configs": configs}), "settings": settings_fingerprint(args)}


def set_aside_other_code(run_dir: Path, args: Sequence[str]) -> Path | None:
    """Before a run starts in ``run_dir``: when a killed run left a checkpoint there under other code or settings
    than ``args`` get now (``code_and_settings``, written by the start of that run into ``run_code.json``), resuming
    it would mix two versions in one record, so its folder is moved aside (``move_aside``) and the run starts afresh.
    Then the current code and settings are written. Returns the new folder of the old run, or None.

    ``zoo.cli.fit_test.check_resumable`` checks the task, model and data of a checkpoint when it is resumed; this
    check sits here, outside the fit, because a change to the fit's own files changes every record's source hash."""
    now = code_and_settings(args)
    started_by = _started_by(run_dir)
    moved = move_aside(run_dir) if started_by is not None and started_by != now else None
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / RUN_CODE).write_text(json.dumps(now) + "\n")
    return moved


def _started_by(run_dir: Path) -> dict | None:
    """The code and settings that started the run whose checkpoint ``run_dir`` holds; None without a checkpoint
    or without ``run_code.json`` (a folder from before these marks)."""
    mark = run_dir / RUN_CODE
    if not last_checkpoint(run_dir).exists() or not mark.exists():
        return None
    return json.loads(mark.read_text())


def checkpoint_from_other_code(run_dir: Path, args: Sequence[str]) -> bool:
    """Whether ``run_dir`` holds a killed run's checkpoint that other code or settings started (its
    ``run_code.json`` differs from ``code_and_settings(args)``). A folder from before these marks: False."""
    started_by = _started_by(run_dir)
    return started_by is not None and started_by != code_and_settings(args)
