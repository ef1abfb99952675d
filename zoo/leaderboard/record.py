"""One JSON record per finished run under ``leaderboard/results/<task>/``: the only source of leaderboard numbers."""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

from zoo.registry import repository_root


@dataclass
class RunRecord:
    """A finished run: what was run (task, method, dataset, config, seed, fold), what it measured and how.

    ``metrics`` maps a logged metric name (``"test/mse"``) to its value; ``extra`` holds task-specific
    structured results (robustness evaluations, diagnostics). ``reduced`` flags settings smaller than the
    paper's (fewer epochs, smaller model), explained in ``note``. ``routing`` is the run's routing summary per
    stage and layer (``zoo.moe.RoutingSummary.to_dict()`` as written by the routing-stats callback), empty for
    dense models and for records written before summaries existed. ``source_hash`` fingerprints the source
    that produced the record (the files its run executes, ``zoo.code_closure``; empty in older records, whose
    ``commit`` is then the only provenance); a table cell whose records carry different fingerprints mixes code
    versions. ``verified`` is the record's provenance chain since its run: one entry per re-verification by
    behaviour (``zoo.reverify``) that moved its ``source_hash`` to newer code whose probe matched the old code's
    bit for bit (from / to commit and source hash, the machine and threads of the probes, the probe hash, the date).
    """

    task: str
    method: str
    dataset: str
    metrics: dict[str, float]
    seed: int
    config: dict
    versions: dict[str, str]
    wall_time_s: float
    commit: str
    machine: dict
    reduced: bool = False
    fold: int | None = None
    note: str = ""
    extra: dict = field(default_factory=dict)
    routing: dict = field(default_factory=dict)
    source_hash: str = ""
    verified: list[dict] = field(default_factory=list)

    def key(self) -> str:
        return record_key(self.method, self.dataset, self.seed, self.fold)


def record_key(method: str, dataset: str, seed: int, fold: int | None = None) -> str:
    """File stem of a record: filesystem-safe and unique per (method, dataset, seed, fold)."""
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "-", f"{method}__{dataset}")
    return f"{safe}__seed{seed}" + (f"__fold{fold}" if fold is not None else "")


def results_dir(task: str, root: Path | None = None) -> Path:
    return (root or repository_root() / "leaderboard") / "results" / task


def record_path(task: str, key: str, root: Path | None = None) -> Path:
    """Where the record with file stem ``key`` (see ``record_key``) lives."""
    return results_dir(task, root) / f"{key}.json"


def write_record(record: RunRecord, root: Path | None = None) -> Path:
    """Write atomically (temp file + rename) so a killed run never leaves a half record behind."""
    return write_record_file(record, record_path(record.task, record.key(), root))


def write_record_file(record: RunRecord, path: Path) -> Path:
    """Write ``record`` to ``path`` atomically (temp file + rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(asdict(record), indent=1, sort_keys=True, default=str) + "\n")
    tmp.replace(path)
    return path


def read_record(path: Path) -> RunRecord:
    """One record file."""
    return RunRecord(**json.loads(Path(path).read_text()))


def read_records(task: str, root: Path | None = None) -> list[RunRecord]:
    folder = results_dir(task, root)
    if not folder.is_dir():
        return []
    return [read_record(p) for p in sorted(folder.glob("*.json"))]
