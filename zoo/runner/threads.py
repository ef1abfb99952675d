"""torch's CPU threads for every run of a process (``--threads``): CPU float sums depend on their number."""

from __future__ import annotations

from zoo.errors import ConfigError


def set_threads(threads: int | None) -> None:
    """Pin torch's CPU threads for every run of this process (``--threads``); None leaves torch's default."""
    if threads is None:
        return
    if threads < 1:
        raise ConfigError(f"--threads {threads}: must be at least 1")
    import torch

    torch.set_num_threads(threads)
