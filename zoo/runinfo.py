"""Facts about a run that make its numbers repeatable: package versions, git commit, machine."""

from __future__ import annotations

import os
import platform
import subprocess
from functools import cache
from importlib.metadata import PackageNotFoundError, version

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


@cache
def git_commit() -> str:
    """The repository's HEAD commit, with ``+dirty`` when tracked files differ from it; "" outside git."""
    root = repository_root()
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10)
        if head.returncode != 0:
            return ""
        # leaderboard/ changes as runs finish; only code and configs make a result "dirty"
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no", "--", ".", ":!leaderboard"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
        return head.stdout.strip() + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return ""


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
