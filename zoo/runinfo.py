"""Facts about a run that make its numbers repeatable: package versions, git commit, machine."""

from __future__ import annotations

import os
import platform
import subprocess
from collections.abc import Iterable
from functools import cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from zoo.registry import repository_root

TRACKED_PACKAGES = (
    "moe-zoo",
    "torch",
    "pytorch-lightning",
    "jsonargparse",
    "torchmetrics",
    "torch-geometric",
    "timm",
    "gymnasium",
    "dm-control",
    "mujoco",
    "numpy",
    "scikit-learn",
    "mammoth-moe",
)


@cache
def package_versions() -> dict[str, str]:
    """Installed versions of the packages a result depends on (missing ones are left out)."""
    found = {"python": platform.python_version()}
    for name in TRACKED_PACKAGES:
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            pass
    return found


# What produces a result: code, configs and the install pins. Outputs (runs/, leaderboard/ pages and records,
# lightning_logs/) and tests do not make a result "dirty".
SOURCE_PATHS = ("zoo", "tasks", "configs", "pyproject.toml", "constraints.txt")


def dirty_sources(root: Path | None = None, paths: Iterable[str] = SOURCE_PATHS) -> list[str] | None:
    """Files under ``paths`` (relative to ``root``; default ``SOURCE_PATHS``) that differ from HEAD: modified,
    staged, deleted or untracked (not ignored). None outside a git checkout."""
    root = root or repository_root()
    try:
        out = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=all", "--", *paths],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0:
        return None
    return [line[3:] for line in out.stdout.splitlines() if line.strip()]


def git_commit(root: Path | None = None) -> str:
    """HEAD's commit, with ``+dirty`` when a source file is modified or untracked (see ``dirty_sources``); ""
    outside git. Not cached: a long ``zoo reproduce`` must notice an edit made while it runs."""
    root = root or repository_root()
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return ""
    if head.returncode != 0:
        return ""
    return head.stdout.strip() + ("+dirty" if dirty_sources(root) else "")


@cache
def machine() -> dict[str, object]:
    """CPU model, core count and accelerator, so a wall time can be read against the hardware it ran on."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            cpu = next(line.split(":", 1)[1].strip() for line in fh if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    info: dict[str, object] = {"cpu": cpu, "cores": os.cpu_count(), "system": platform.system()}
    try:
        import torch

        info["torch_threads"] = torch.get_num_threads()
        if torch.cuda.is_available():
            info["gpu"] = torch.cuda.get_device_name(0)
    except ImportError:
        pass
    return info
