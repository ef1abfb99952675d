"""A lock per run, so that several ``zoo reproduce`` processes can share one grid on one machine.

Each process claims a run with an exclusive, non-blocking ``flock`` on ``run.lock`` in the run's folder and
writes its pid there for whoever looks. The kernel drops the lock when the holder exits or is killed, so a
dead reproduction never blocks its own resumption and there is no stale-lock guessing. ``flock`` is advisory
and local: processes on other machines sharing the folder over NFS are not coordinated.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

LOCK_NAME = "run.lock"


class RunLock:
    """Claim of one run folder by this process; ``acquire()`` is False while another process holds it.

    Use as ``lock = RunLock(run_dir); if lock.acquire(): try: ... finally: lock.release()``.
    """

    def __init__(self, run_dir: Path):
        self.path = Path(run_dir) / LOCK_NAME
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def holder(self) -> str:
        """What the holder wrote (its pid), or '' when nothing can be read."""
        try:
            return self.path.read_text().strip()
        except OSError:
            return ""

    def _try_flock(self, wait: bool = False) -> int | None:
        """An open descriptor holding the flock, or None when another process holds it (``wait``: block until
        it is released instead)."""
        fd = os.open(self.path, os.O_CREAT | os.O_RDWR, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            os.close(fd)
            return None
        return fd

    def acquire(self, wait: bool = False) -> bool:
        """Claim the folder; False when another process holds it, or, with ``wait``, block until it is free."""
        if self.held:
            return True
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = self._try_flock(wait)
        if fd is None:
            return False
        os.ftruncate(fd, 0)
        os.write(fd, f"pid {os.getpid()}\n".encode())
        self._fd = fd
        return True

    def held_elsewhere(self) -> bool:
        """Whether another process holds the lock now. Creates nothing when there is no lock file, and holds
        the lock only for the instant of the test (without rewriting the holder's pid)."""
        if self.held or not self.path.exists():
            return False
        fd = self._try_flock()
        if fd is None:
            return True
        os.close(fd)
        return False

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing drops the flock; the file stays, harmless and reusable
            self._fd = None
