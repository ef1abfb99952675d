"""Re-stamp a record whose probe matched: its numbers, commit, machine and wall time stay; its ``source_hash``
becomes the new code's and its ``verified`` chain gains an entry saying from which code to which, where and how."""

from __future__ import annotations

import time
from pathlib import Path

from zoo.leaderboard.cpu_identity import IDENTITY_KEYS, record_machine
from zoo.leaderboard.record import RunRecord, read_record, write_record_file
from zoo.runinfo import package_versions


def verified_entry(
    from_commit: str, from_hash: str, to_commit: str, to_hash: str, threads: int | None, probe_hash: str
) -> dict:
    """One link of a record's provenance chain: the probes of ``from_commit`` and ``to_commit`` on this machine's
    CPU (``machine``: its identity keys) with ``threads`` torch threads and the third-party ``versions`` installed
    here (both probes ran with them) gave the same ``probe_hash``."""
    here = record_machine()
    return {
        "from_commit": from_commit,
        "from_source_hash": from_hash,
        "to_commit": to_commit,
        "to_source_hash": to_hash,
        "machine": {key: here[key] for key in IDENTITY_KEYS if key in here},
        "threads": threads,
        "probe_hash": probe_hash,
        "versions": package_versions(),
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def restamp(path: Path, expected_hash: str, entry: dict) -> RunRecord | None:
    """Re-stamp the record at ``path`` with ``entry`` (atomically); None, untouched, when the file's record no longer
    carries ``expected_hash`` (another process re-ran or re-stamped it meanwhile)."""
    record = read_record(path)
    if record.source_hash != expected_hash:
        return None
    record.source_hash = entry["to_source_hash"]
    record.verified = [*(record.verified or []), entry]
    write_record_file(record, path)
    return record
