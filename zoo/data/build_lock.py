"""One process at a time builds a dataset's derived files (a PyG ``processed/`` folder, a converted cache).

Two ``zoo reproduce`` processes started together on a fresh machine both find no cache and both build it; one
then reads the file the other is still writing (seen: PyG's ``Planetoid`` failing with torch's "failed finding
central directory" on a half-written ``processed/data.pt``). :func:`build_lock` is a blocking, exclusive
``flock`` on ``<cache>/locks/<key>.lock``: the second process waits, then finds the finished cache. The kernel
drops the lock when its holder exits or is killed, so a dead build never blocks the next one. Written here
because no dependency offers an inter-process lock (``filelock`` is not among the project's dependencies).
"""

from __future__ import annotations

import fcntl
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager

from zoo.data.resolve import cache_dir


@contextmanager
def build_lock(key: str) -> Iterator[None]:
    """Hold the exclusive build lock named ``key`` (e.g. ``"Planetoid-Cora"``) for the ``with`` body."""
    folder = cache_dir() / "locks"
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder / f"{re.sub(r'[^A-Za-z0-9_.-]', '_', key)}.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing drops the flock
