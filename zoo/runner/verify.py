"""``zoo reproduce TASK --verify KEY``: re-run recorded rows with the installed code and compare with their records.

A record is only worth publishing if its row repeats. For each record (its file stem, e.g.
``ABMIL__MUSK1__seed0__fold3``, or its path) this runs the row's (seed, fold) again with the record's thread count
and tuned values into a fresh folder under ``runs/verify/`` (never resuming, never writing a record), then prints
the recorded and the new value of every metric and the largest difference. It also says what differs between the
record's run and this one: its row's settings (the re-run uses the current ones), its source fingerprint, its data
files (``extra.data_sha256``, where the datamodule reports them) and the CPU (model name, the instruction set of
torch's kernels, family / model / stepping: ``zoo.leaderboard.cpu_identity``), since those may legitimately move the
numbers: a record written with other settings, by other code, from other data or on another kind of CPU is not
expected to repeat to the last bit.
Exit status 1 when a metric differs by more than ``--tolerance``.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from zoo.cli.fit_test import FitTest, fit_and_test
from zoo.errors import ConfigError
from zoo.leaderboard.cpu_identity import IDENTITY_KEYS, record_machine
from zoo.leaderboard.provenance import written_by_current_code
from zoo.leaderboard.record import RunRecord, read_record, record_path
from zoo.leaderboard.settings import row_args, row_of, settings_changed
from zoo.registry import BenchmarkRow, TaskSpec
from zoo.runner.metric_change import largest_change
from zoo.runner.stop_signal import stop_if_asked
from zoo.runner.threads import set_threads


def _tuned_overrides(row: BenchmarkRow, record: RunRecord) -> list[str]:
    """The values a tuned row's record was tested with (never re-tuned: a new study could choose others)."""
    if not row.tune_trials:
        return []
    from zoo.tuning.study import recorded_choice

    tuned = recorded_choice(record.extra)
    if tuned is None:
        raise ConfigError(
            f"record {record.key()} belongs to a tuned row but holds no readable tuning: it cannot be re-run"
        )
    return list(tuned.overrides)


def _differences(spec: TaskSpec, record: RunRecord, here: dict) -> list[str]:
    """What differs between the record's run and this one: its row's settings, or what may change CPU float sums."""
    out = []
    if settings_changed(spec, record):
        out.append("the row's settings changed since the record (this re-run uses the current ones)")
    current = written_by_current_code(record)
    if current is False:
        out.append("the record was written by other code (source fingerprint differs)")
    elif current is None:
        out.append("the record has no source fingerprint")
    if record.verified:
        last = record.verified[-1]
        out.append(
            f"the record was run at {record.commit[:7]} and re-verified by behaviour {len(record.verified)} time(s), "
            f"last from {last.get('from_commit', '')[:7]} to {last.get('to_commit', '')[:7]} (zoo.reverify): its "
            "numbers come from that run, its source fingerprint from the code its probe matched"
        )
    for key in IDENTITY_KEYS:
        if key not in record.machine:
            out.append(f"the record does not name its {key} (here {here.get(key)!r}): it may have met another CPU")
        elif record.machine[key] != here.get(key):
            out.append(f"{key}: record {record.machine[key]!r}, here {here.get(key)!r}")
    return out


def data_comparison(recorded: dict[str, str], here: dict[str, str]) -> str | None:
    """One line comparing the data files' sha256 of the record's run and the re-run (file name -> sha256); None when
    the re-run reports none (its datamodule does not hash its files)."""
    if not here:
        return None
    if not recorded:
        return f"note: the record holds no data hashes (the re-run read {len(here)} files): its data cannot be compared"
    differ = sorted(name for name in recorded.keys() & here.keys() if recorded[name] != here[name])
    only = sorted(recorded.keys() ^ here.keys())
    if not differ and not only:
        return f"data: {len(here)} files, every sha256 equal to the record's"
    parts = [
        f"{len(differ)} of {len(recorded)} data files differ from the record's"
        + (f" ({differ[0]}, ...)" if differ else "")
    ]
    if only:
        parts.append(f"{len(only)} read by only one of the two runs ({only[0]}, ...)")
    return "note: " + "; ".join(parts)


def verify_record(spec: TaskSpec, key: str, leaderboard: Path, runs_root: Path) -> tuple[RunRecord, FitTest]:
    """Re-run the record ``key`` (file stem or path) and return it with the re-run's result."""
    stem = Path(key).name.removesuffix(".json")
    path = record_path(spec.name, stem, leaderboard)
    if not path.exists():
        raise ConfigError(f"no record {path}")
    record = read_record(path)
    row = row_of(spec, record)
    if row is None:
        raise ConfigError(f"record {stem} is not a benchmark row of {spec.name} (the row was renamed or removed)")
    threads = record.machine.get("torch_threads")
    set_threads(int(threads) if threads else None)
    args = row_args(spec, row, record.seed, record.fold, False) + _tuned_overrides(row, record)
    parent = runs_root / "verify" / spec.name / stem
    parent.mkdir(parents=True, exist_ok=True)
    run_dir = Path(tempfile.mkdtemp(prefix=time.strftime("%Y%m%d-%H%M%S-"), dir=parent))  # new: never resumes
    return record, fit_and_test(args, run_dir)


def verify_records(spec: TaskSpec, keys: list[str], leaderboard: Path, runs_root: Path, tolerance: float) -> int:
    """Re-run each record of ``keys`` and print how its metrics compare; 1 when one differs by more than
    ``tolerance``, else 0."""
    here, worst_all = record_machine(), 0.0
    for key in keys:
        stop_if_asked(f"the re-run of {key}")
        record, result = verify_record(spec, key, leaderboard, runs_root)
        metrics = result.metrics
        change = largest_change(record.metrics, metrics)
        if change is None:
            raise ConfigError(
                f"the re-run of {record.key()} gave none of its recorded metrics {sorted(record.metrics)}"
            )
        worst = change[1]
        worst_all = max(worst_all, worst)
        verdict = "repeats" if worst <= tolerance else f"DIFFERS (tolerance {tolerance:g})"
        print(f"{record.key()} (recorded at {record.commit[:7]}): max |Δ| = {worst:.3g}: {verdict}")
        for m in (m for m in record.metrics if m in metrics):
            print(f"  {m}: recorded {record.metrics[m]:.6g}, re-run {metrics[m]:.6g}")
        data = data_comparison((record.extra or {}).get("data_sha256") or {}, result.extra.get("data_sha256") or {})
        if data:
            print(f"  {data}")
        for line in _differences(spec, record, here):
            print(f"  note: {line}")
    return 0 if worst_all <= tolerance else 1
