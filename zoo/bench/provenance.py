"""What a benchmark file must say about the run that wrote it, beside its numbers: the commit (``+dirty`` when source
files differ from it), the package versions and the machine (CPU model, cores, torch threads), from the same functions
that stamp leaderboard records (``zoo.runinfo``, ``zoo.leaderboard.versions``)."""

from __future__ import annotations

from zoo.leaderboard.versions import run_versions
from zoo.runinfo import git_commit, machine


def provenance() -> dict[str, object]:
    """{"commit": str, "versions": {package: version}, "machine": {"cpu", "cores", "torch_threads", ...}}."""
    return {"commit": git_commit(), "versions": run_versions(), "machine": machine()}


def machine_phrase(info: dict | str | None) -> str:
    """``zoo.runinfo.machine()``'s dict (or an older file's string) as one phrase for a page."""
    if not isinstance(info, dict):
        return info or "?"
    text = f"{info.get('cpu', '?')}, {info.get('cores', '?')} cores, {info.get('torch_threads', '?')} torch thread(s)"
    return text + (f", {info['gpu']}" if info.get("gpu") else "")
