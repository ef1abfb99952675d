"""The four regimes of `zoo bench moe`: idle or contended cores x OpenMP wait policy unset or passive.

OpenMP reads ``OMP_WAIT_POLICY`` once, when the runtime starts, so every regime runs in its own child process.
The contended regimes start a fixed companion load first, a 2-thread loop of 1024 x 1024 float32 GEMMs in
another process with the OpenMP default policy (what a second training job or a data loader looks like), and
stop it afterwards.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

REGIMES: dict[str, tuple[bool, str | None]] = {
    "idle-unset": (False, None),
    "idle-passive": (False, "PASSIVE"),
    "contended-unset": (True, None),
    "contended-passive": (True, "PASSIVE"),
}
LABELS = {
    "idle-unset": "idle, OMP_WAIT_POLICY unset (what users have)",
    "idle-passive": "idle, OMP_WAIT_POLICY=PASSIVE",
    "contended-unset": "contended, OMP_WAIT_POLICY unset",
    "contended-passive": "contended, OMP_WAIT_POLICY=PASSIVE",
}
COMPANION = (
    "import torch\n"
    "torch.set_num_threads({threads})\n"
    "a, b = torch.randn(1024, 1024), torch.randn(1024, 1024)\n"
    "while True:\n"
    "    a @ b\n"
)


def env_for(policy: str | None) -> dict[str, str]:
    """This process's environment with ``OMP_WAIT_POLICY`` set to ``policy`` (None: removed)."""
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    if policy:
        env["OMP_WAIT_POLICY"] = policy
    return env


@contextmanager
def companion(threads: int = 2, settle_s: float = 1.0) -> Iterator[subprocess.Popen]:
    """Run the companion GEMM loop for the duration of the block; it is always stopped afterwards."""
    proc = subprocess.Popen(
        [sys.executable, "-c", COMPANION.format(threads=threads)],
        env=env_for(None),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        time.sleep(settle_s)
        if proc.poll() is not None:
            raise RuntimeError(f"the companion load exited at once: {proc.stderr.read().decode()[-300:]}")
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
