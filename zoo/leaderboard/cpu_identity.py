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

from pathlib import Path

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
    from zoo.runinfo import machine

    return {**machine(), **cpu_identity()}
