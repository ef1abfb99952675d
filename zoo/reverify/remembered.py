"""The base probe a group's records remember: the probe hash their last re-verification wrote (``verified[-1]``), used
in place of probing the records' code again when it was made by the same code, the same probe, the same thread count
on this CPU kind with this machine's third-party versions.

Why a remembered hash can only save a probe, never re-stamp a record a fresh base probe would leave stale: the hash of
a probe covers its whole content (the short fit, the schedule trace, every (seed, fold)'s split, the overrides and the
thread count), and a probe is a function of its code, its probe worker, its CPU kind, its thread count and its
installed versions (the same bit-identity that makes two commits comparable at all). With those five equal, the
remembered hash is what probing the base now would give for the same group; a group that differs from the one the
hash was made for (a record added or removed, other overrides) changes the probe's content, so HEAD's probe cannot
equal it. A HEAD probe that differs from the remembered hash therefore proves nothing by itself: the base is then
probed as before, to decide and to say where the two differ.
"""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

from zoo.leaderboard.cpu_identity import IDENTITY_KEYS, record_machine
from zoo.reverify.workers import WORKER
from zoo.runinfo import package_versions


def worker_id(script: bytes) -> str:
    """The probe worker's identity: the sha256 of its source, 16 hex digits."""
    return hashlib.sha256(script).hexdigest()[:16]


def worker_at(repo: Path, commit: str) -> str | None:
    """The id of ``commit``'s probe worker, None when that commit has none."""
    done = subprocess.run(["git", "-C", str(repo), "show", f"{commit}:{WORKER}"], capture_output=True, check=False)
    return worker_id(done.stdout) if done.returncode == 0 else None


def here() -> dict:
    """This machine's CPU identity, as a ``verified`` entry names it."""
    machine = record_machine()
    return {key: machine[key] for key in IDENTITY_KEYS if key in machine}


def remembered_hash(repo: Path, records: list, source_hash: str, threads: int | None, worker: str) -> str | None:
    """The base probe hash ``records`` (one group) remember, or None when a fresh probe is needed: each record's last
    ``verified`` entry must be the same probe (one ``probe_hash``), made of the code the group's ``source_hash``
    names, by the probe worker ``worker`` (an entry written before the worker was recorded ran its ``to_commit``'s
    worker), with ``threads`` torch threads, on this CPU kind with the versions installed here."""
    entries = [(getattr(record, "verified", None) or [None])[-1] for record in records]
    if not entries or any(entry is None for entry in entries):
        return None
    first = entries[0]
    if any(entry.get("probe_hash") != first.get("probe_hash") for entry in entries) or not first.get("probe_hash"):
        return None
    if first.get("to_source_hash") != source_hash or first.get("threads") != threads:
        return None
    if first.get("machine") != here() or first.get("versions") != package_versions():
        return None
    made_by = first.get("worker") or worker_at(repo, first.get("to_commit", ""))
    return first["probe_hash"] if made_by == worker else None
