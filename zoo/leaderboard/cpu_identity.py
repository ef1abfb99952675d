"""Which CPU a record ran on, beyond its model name: the instruction set torch's kernels used and the CPU's
family / model / stepping.

CPU float sums depend on the kernels: an AVX-512 GEMM adds in another order than an AVX2 one, so a deterministic
run repeats to the last bit only on the same kind of CPU. Virtual machines often name their CPU "AMD EPYC" or
"Intel Xeon Processor" whatever its generation, so the model name alone cannot say whether a record that does not
repeat met another CPU. ``record_machine()`` is the ``machine`` a record gets (``zoo reproduce`` and the router
matrix write it) and the one ``zoo reproduce --verify`` compares a record with.

Kept out of ``zoo.runinfo`` on purpose: every run imports runinfo, so its source is part of every record's source
fingerprint (``zoo.code_closure``) and a change there would mark every record as written by other code.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from zoo.runinfo import machine

if TYPE_CHECKING:
    from zoo.leaderboard.record import RunRecord

IDENTITY_KEYS = ("cpu", "cpu_isa", "cpu_id")


def cpu_identity(cpuinfo: Path = Path("/proc/cpuinfo")) -> dict[str, str]:
    """``{"cpu_isa": torch's CPU capability (e.g. "AVX2", "AVX512"), "cpu_id": "family F model M stepping S"}``;
    a key is left out where the platform does not say (no /proc/cpuinfo outside Linux)."""
    info: dict[str, str] = {}
    try:
        import torch

        info["cpu_isa"] = str(torch.backends.cpu.get_cpu_capability())
    except (ImportError, AttributeError):
        pass
    fields: dict[str, str] = {}
    try:
        for line in cpuinfo.read_text().splitlines():
            if not line.strip():
                break  # the first processor's block is enough
            key, _, value = line.partition(":")
            fields[key.strip()] = value.strip()
    except OSError:
        pass
    if all(k in fields for k in ("cpu family", "model", "stepping")):
        info["cpu_id"] = f"family {fields['cpu family']} model {fields['model']} stepping {fields['stepping']}"
    return info


def record_machine() -> dict:
    """This machine as a leaderboard record names it: ``zoo.runinfo.machine()`` (CPU model, cores, torch threads,
    ...) plus ``cpu_identity()``."""
    return {**machine(), **cpu_identity()}


def machine_counts(records: Sequence[RunRecord]) -> str:
    """The machines the records ran on, each with its record count, e.g. ``AMD EPYC, 2 cores, AVX2, family 25 model 1
    stepping 1: 14; Intel(R) Xeon(R) Processor, 2 cores: 1``, for a page: a deterministic record repeats to the last
    bit only on its own CPU kind. Records older than ``cpu_isa`` / ``cpu_id`` name the model and cores only."""
    counts: dict[str, int] = {}
    for r in records:
        m = r.machine or {}
        parts = [
            str(m.get("cpu", "?")),
            f"{m.get('cores', '?')} cores",
            *(str(m[k]) for k in ("cpu_isa", "cpu_id") if k in m),
        ]
        name = ", ".join(parts)
        counts[name] = counts.get(name, 0) + 1
    return "; ".join(f"{name}: {n}" for name, n in sorted(counts.items()))
