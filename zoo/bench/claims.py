"""Speed and memory claims on a leaderboard page, read from benchmark records (``zoo.bench.provenance``).

A page's speed or memory claim is a row computed from the newest record of a ``zoo bench`` program that carries
its provenance (commit, source hash, machine) and measured what the claim is about (``newest``), shown with that
provenance (``provenance_line``). Where no such record exists, the row says ``NO_RECORD`` instead of a verdict:
numbers typed into notes, and files written before benchmark records carried a commit and a source hash, make no
claim.

Verdicts follow the one comparison rule of ``zoo.leaderboard.compare``: the bench's repeated measurements are
paired (the methods of one repeat ran side by side), each pair gives a gain past the claim's bar (a saving, a
speed-up, a ratio to a dense twin), and the claim is met when the 95 % Student-t interval of the mean gain lies
above zero (fewer than 3 pairs: "n too small").
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path

from zoo.bench.provenance import PROVENANCE_KEYS, machine_phrase, record_folder, source_hash
from zoo.leaderboard.compare import t_comparison
from zoo.leaderboard.targets import IMPROVES, Verdict, claim_met, verdict_table

NO_RECORD = "no benchmark record"
NO_PROVENANCE = "no benchmark record (this file has no commit or source hash)"


def read_records(name: str, root: Path | None = None) -> list[tuple[Path, dict]]:
    """Every JSON file in ``zoo bench NAME``'s leaderboard folder (``record_folder``), parsed, by file name."""
    folder = record_folder(name, root)
    return [(p, json.loads(p.read_text())) for p in sorted(folder.glob("*.json"))] if folder.is_dir() else []


def has_provenance(record: dict) -> bool:
    """Whether a benchmark file is a record: it names its commit, source hash and machine."""
    return all(record.get(k) for k in PROVENANCE_KEYS)


def newest(
    name: str, where: Callable[[dict], bool] = lambda record: True, root: Path | None = None
) -> tuple[Path, dict] | None:
    """The newest (by ``date``) record of ``zoo bench NAME`` with provenance for which ``where`` holds; None if
    there is none."""
    found = [(p, r) for p, r in read_records(name, root) if has_provenance(r) and where(r)]
    return max(found, key=lambda pr: pr[1].get("date", "")) if found else None


def code_state(record: dict) -> str:
    """Whether the benchmark's code (its source closure) is still the code that wrote the record."""
    roots = record.get("source_roots") or []
    if roots and source_hash(roots) == record.get("source_hash"):
        return "the bench's code is unchanged since"
    return "the bench's code has changed since: re-run the command to judge the current code"


def _load(machine: dict) -> str:
    start, end = machine.get("load_avg_start"), machine.get("load_avg_end")
    if not start:
        return ""
    return f", load average {start[0]:.1f} at start" + (f" / {end[0]:.1f} at end" if end else "")


def provenance_line(path: Path, record: dict, leaderboard: Path | None = None) -> str:
    """One sentence for a page: which record, its command, date, commit (and uncommitted bench files), source hash
    (and whether the code changed since), machine and load, how long it ran."""
    from zoo.registry import repository_root

    try:
        relative = path.relative_to(leaderboard or repository_root() / "leaderboard")
        shown = f"[`{relative}`]({relative})"  # a link from the page, which lives in the leaderboard folder
    except ValueError:
        shown = f"`{path.name}`"
    machine = record.get("machine") or {}
    dirty = record.get("dirty_files") or []
    commit = str(record.get("commit", "?"))[:12]
    if dirty:
        commit += f" with uncommitted changes in {', '.join(dirty)}"
    return (
        f"Record {shown}: `{record.get('command', '?')}`, {record.get('date', '?')}, commit {commit}, source hash "
        f"{str(record.get('source_hash', '?'))[:12]} ({code_state(record)}); {machine_phrase(machine)}"
        f"{_load(machine)}; {record.get('seconds', '?')} s."
    )


def claim(target: str, where: str, ours: str, gains: Iterable[float], percent: bool = False) -> Verdict:
    """A claim judged on paired gains past its bar (positive = the claim holds for that pair)."""
    comparison = t_comparison(gains)
    return Verdict(target, where, ours, claim_met(comparison, IMPROVES), comparison, percent=percent)


def no_record(target: str, where: str, why: str = NO_RECORD, ours: str = "—") -> Verdict:
    """A claim row without a record to judge it: no verdict, the reason in its outcome."""
    return Verdict(target, where, ours, None, None, outcome=why)


CLAIMS_INTRO = (
    "Each row is judged on the benchmark record named under the table, never on numbers typed into the notes. "
    "Δ: the mean, over n paired measurements (the methods of one repeat ran side by side), of the gain past the "
    "claim's bar, with its 95 % Student-t interval; the claim is met when the interval lies above 0 (below 3 "
    'pairs: "n too small"). Without a record the row says "no benchmark record".'
)


def claims_table(verdicts: list[Verdict]) -> list[str]:
    """The claims' markdown table (the Targets table's columns)."""
    return [CLAIMS_INTRO, "", *verdict_table(verdicts)]
