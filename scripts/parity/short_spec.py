"""What a short-training comparison is (issue 59, item 2): one `ShortTraining` per comparison, defined in
``scripts/parity/short_<upstream>.py`` (a tuple ``COMPARISONS``) and run by ``scripts.parity.short_training``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class ShortTraining:
    """One comparison: what both sides train, ours as ``zoo fit`` arguments, theirs as a command in their folder."""

    name: str
    task: str
    method: str
    dataset: str
    budget: str  # what both sides train, in words
    metrics: tuple[str, ...]  # ours' names; theirs are parsed into the same names
    higher_is_better: tuple[str, ...]
    upstream: str  # owner/repo
    upstream_commit: str
    ours: tuple[str, ...]  # zoo fit arguments; the seed is added
    theirs_folder: str  # inside the upstream checkout: the folder their command runs in ("": the checkout itself)
    theirs: Callable[[int, Path], list[str]]  # (seed, data mirror) -> argv after the Python executable, run in
    # a scratch copy of theirs_folder
    parse: Callable[[str], dict[str, float]]  # their output -> metrics
    differences: tuple[str, ...] = field(default=())
    their_packages: tuple[str, ...] = ("torch", "numpy")  # whose versions their record names
