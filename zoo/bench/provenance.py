"""What a benchmark file must say about the run that wrote it, beside its numbers: the commit (``+dirty`` when source
files differ from it), the package versions and the machine (CPU model, cores, torch threads), from the same
``zoo.runinfo`` functions that stamp leaderboard records."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from zoo.runinfo import git_commit, machine, package_versions


def provenance(*packages: str) -> dict[str, object]:
    """{"commit": str, "versions": {package: version}, "machine": {"cpu", "cores", "torch_threads", ...}}; ``packages``
    adds the versions of a benchmark's own dependencies that ``zoo.runinfo`` does not track (installed ones only)."""
    versions = dict(package_versions())
    for name in packages:
        try:
            versions[name] = version(name)
        except PackageNotFoundError:
            pass
    return {"commit": git_commit(), "versions": versions, "machine": machine()}


def machine_phrase(info: dict | str | None) -> str:
    """``zoo.runinfo.machine()``'s dict (or an older file's string) as one phrase for a page."""
    if not isinstance(info, dict):
        return info or "?"
    text = f"{info.get('cpu', '?')}, {info.get('cores', '?')} cores, {info.get('torch_threads', '?')} torch thread(s)"
    return text + (f", {info['gpu']}" if info.get("gpu") else "")
