"""The one way every ``zoo bench NAME`` program writes its result: a benchmark record, the measured numbers beside
what made them, as a leaderboard metric record carries them.

A record holds ``bench`` (the name), ``command`` (the exact ``zoo bench`` command line), ``date`` (UTC, at the
start), ``seconds`` (how long the program ran), ``commit`` (HEAD at the start), ``source_hash`` (sha256 of the
benchmark's source closure at the start: ``zoo.code_closure`` from ``source_roots``, the bench module and the
modules it measures; the record writer and the page side, ``NOT_MEASURING``, are left out since they cannot change
a number), ``dirty`` / ``dirty_files`` (closure files that differ from HEAD: then ``commit`` alone does not name
the code that ran, ``source_hash`` does), ``machine`` (``zoo.leaderboard.cpu_identity.record_machine()``, the
block metric records carry, plus the load average at start and end and the contention regime where the bench sets
one) and ``versions`` (``zoo.leaderboard.versions``), then the bench's own numbers.

Where: ``--out FILE``; ``--leaderboard``: the folder the pages read (``record_folder``); neither:
``runs/bench/<name>/``, a run that no page reads. ``zoo bench moe`` keeps its older default, the leaderboard.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

WRITER = "zoo.bench.provenance"
# Modules a bench may import that only write or show records: left out of its source hash (not followed).
NOT_MEASURING = (WRITER, "zoo.bench.claims", "zoo.bench.task_speed_page")
# A core bench's records live in the folder named after its page (``leaderboard/<folder>.md``). (A task's
# bench whose records live in its own folder passes that folder to record_folder: the core names no task.)
FOLDERS = {"moe": "moe_layer", "tasks": "task_speed", "ep": "expert_parallel_bench"}
PROVENANCE_KEYS = ("commit", "source_hash", "machine")


def record_folder(name: str, root: Path | None = None, folder: str | None = None) -> Path:
    """Where the leaderboard keeps ``zoo bench NAME``'s records: ``leaderboard/results/bench/<name>/``, or
    ``folder`` (relative to ``leaderboard/results/``) for a bench whose page reads another, or the older folder of
    ``FOLDERS``."""
    from zoo.leaderboard.record import results_dir

    return results_dir(folder or FOLDERS.get(name, f"bench/{name}"), root)


def add_output_arguments(parser: argparse.ArgumentParser, aliases: Sequence[str] = ()) -> None:
    """``--out FILE`` (also spelt as ``aliases``) / ``--leaderboard``, mutually exclusive: where ``output_path``
    puts the record."""
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--out", *aliases, dest="out", type=Path, default=None, help="the record (JSON) to write")
    where.add_argument(
        "--leaderboard",
        action="store_true",
        help="write the record where the leaderboard pages read it (leaderboard/results/...); default: runs/bench/",
    )


def stamp() -> str:
    """A UTC timestamp for a record's file name, to the second."""
    return time.strftime("%Y-%m-%d-%H%M%S", time.gmtime())


def output_path(
    name: str, out: Path | None = None, leaderboard: bool = False, suffix: str = "", folder: str | None = None
) -> Path:
    """``out`` if given; else ``<record_folder(name, folder=folder)>/<stamp><suffix>.json`` with ``leaderboard``,
    else the same file name under ``runs/bench/<name>/`` (relative to the working directory)."""
    if out is not None:
        return Path(out)
    folder = record_folder(name, folder=folder) if leaderboard else Path("runs") / "bench" / name
    return folder / f"{stamp()}{suffix}.json"


def head_commit(root: Path | None = None) -> str:
    """HEAD's commit ("" outside git); whether the bench's own files differ from it is ``dirty_files``."""
    from zoo.registry import repository_root

    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root or repository_root(), capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    return out.stdout.strip() if out.returncode == 0 else ""


def dirty_files(files: Iterable[Path], root: Path | None = None) -> list[str] | None:
    """Those of ``files`` inside the checkout that differ from HEAD (modified, staged or untracked), relative to
    its root; None outside git."""
    from zoo.registry import repository_root
    from zoo.runinfo import dirty_sources

    root = (root or repository_root()).resolve()
    inside = sorted({str(p.resolve().relative_to(root)) for p in files if p.resolve().is_relative_to(root)})
    if not inside:
        return []
    dirty = dirty_sources(root, inside)
    return None if dirty is None else sorted(dirty)


def source_closure(roots: Iterable[str]) -> dict[str, Path]:
    """The first-party modules a benchmark from ``roots`` runs, those that only write or show records
    (``NOT_MEASURING``) left out."""
    from zoo.code_closure import closure

    return closure(roots, stop=NOT_MEASURING)


def source_hash(roots: Iterable[str]) -> str:
    """sha256 of ``source_closure(roots)`` (``zoo.code_closure.closure_hash``): equal for byte-identical code."""
    from zoo.code_closure import closure_hash

    return closure_hash(roots, stop=NOT_MEASURING)


def load_average() -> list[float] | None:
    """The 1, 5 and 15 minute load averages (None where the platform has none)."""
    return [round(v, 2) for v in os.getloadavg()] if hasattr(os, "getloadavg") else None


def bench_machine(threads: int | None = None, regime: str | None = None) -> dict:
    """The machine block of a metric record (``record_machine``), ``torch_threads`` as the bench set them."""
    from zoo.leaderboard.cpu_identity import record_machine

    info = dict(record_machine())
    if threads is not None:
        info["torch_threads"] = threads
    elif "torch" in sys.modules:
        info["torch_threads"] = sys.modules["torch"].get_num_threads()
    if regime is not None:
        info["regime"] = regime
    return info


class BenchRun:
    """One run of ``zoo bench NAME``: created when the measurement starts (commit, source hash and uncommitted bench
    files, clock, load average), its record built by ``record`` and written by ``write``.

    ``roots``: the bench module and the modules it measures (``source_hash``); ``argv``: the arguments after
    ``zoo bench NAME`` (default ``sys.argv[1:]``)."""

    def __init__(self, name: str, roots: Iterable[str], argv: Sequence[str] | None = None):
        self.name = name
        self.roots = sorted(set(roots))
        self.argv = [str(a) for a in (argv if argv is not None else sys.argv[1:])]
        # the code as the run starts: a commit or an edit that lands while it runs does not rename what it measured
        self.commit, self.dirty = head_commit(), dirty_files(source_closure(self.roots).values())
        self.source_hash = source_hash(self.roots)
        self.started = dt.datetime.now(dt.UTC)
        self.clock = time.perf_counter()
        self.load_start = load_average()

    @property
    def command(self) -> str:
        """The exact command line, as ``zoo bench`` takes it."""
        return shlex.join(["zoo", "bench", self.name, *self.argv])

    def record(self, numbers: dict, threads: int | None = None, regime: str | None = None) -> dict:
        """The record: provenance (see the module doc), then ``numbers`` (which may not reuse a provenance key)."""
        from zoo.leaderboard.versions import run_versions

        machine = bench_machine(threads, regime)
        machine.update(load_avg_start=self.load_start, load_avg_end=load_average())
        head = {
            "bench": self.name,
            "command": self.command,
            "date": self.started.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "seconds": round(time.perf_counter() - self.clock, 1),
            "commit": self.commit,
            "dirty": bool(self.dirty),
            "dirty_files": self.dirty or [],
            "source_hash": self.source_hash,
            "source_roots": self.roots,
            "machine": machine,
            "versions": run_versions(),
        }
        clash = sorted(set(head) & set(numbers))
        if clash:
            raise ValueError(f"benchmark numbers may not use the record's provenance keys: {', '.join(clash)}")
        return {**head, **numbers}

    def write(self, numbers: dict, path: Path, threads: int | None = None, regime: str | None = None) -> dict:
        """Build the record and write it to ``path`` atomically (temp file + rename); prints where."""
        record = self.record(numbers, threads, regime)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(record, indent=1) + "\n")
        tmp.replace(path)
        print(f"wrote {path}", flush=True)
        return record


def provenance() -> dict[str, object]:
    """{"commit", "versions", "machine"} of this process, for a result that is not a benchmark record."""
    from zoo.leaderboard.versions import run_versions
    from zoo.runinfo import git_commit, machine

    return {"commit": git_commit(), "versions": run_versions(), "machine": machine()}


def machine_phrase(info: dict | str | None) -> str:
    """A record's machine block (or an older file's string) as one phrase for a page."""
    if not isinstance(info, dict):
        return info or "?"
    text = f"{info.get('cpu', '?')}, {info.get('cores', '?')} cores"
    text += "".join(f", {info[k]}" for k in ("cpu_isa", "cpu_id") if info.get(k))
    text += f", {info.get('torch_threads', '?')} torch thread(s)"
    return text + (f", {info['gpu']}" if info.get("gpu") else "")
