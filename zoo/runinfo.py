"""Facts about a run that make its numbers repeatable: package versions, git commit, machine."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import platform
import subprocess
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


def dirty_sources(root: Path | None = None) -> list[str] | None:
    """Source files (``SOURCE_PATHS``) that differ from HEAD: modified, staged, deleted or untracked (not ignored).
    None outside a git checkout."""
    root = root or repository_root()
    try:
        out = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=all", "--", *SOURCE_PATHS],
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


def _package_dir(module: str) -> Path | None:
    """The folder of the package holding ``module`` (``pkg.domain.spec`` -> ``pkg/domain/``; a top-level
    package is its own folder)."""
    package = module.rpartition(".")[0] or module
    try:
        found = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    if found is None:
        return None
    if found.submodule_search_locations:
        return Path(next(iter(found.submodule_search_locations)))
    return Path(found.origin).parent if found.origin else None


def _tree_files(folder: Path) -> list[Path]:
    return sorted(
        p
        for p in folder.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix not in (".pyc", ".pyo")
    )


@cache
def source_hash(module: str) -> str:
    """sha256 over the sorted (relative path, bytes) of every file of ``zoo/`` and of the package holding
    ``module`` (a task's spec module, e.g. ``<tasks>.mil.spec`` -> ``tasks/mil/``): two records with the same value
    were made by the same code, whatever the commit says. Records store it as ``source_hash``."""
    digest = hashlib.sha256()
    folders = [("zoo", Path(__file__).resolve().parent)]
    task = _package_dir(module)
    if task is not None and task.resolve() != folders[0][1]:
        folders.append((module.split(".")[0] + ":" + task.name, task.resolve()))
    for label, folder in folders:
        for path in _tree_files(folder):
            rel = f"{label}/{path.relative_to(folder).as_posix()}"
            digest.update(rel.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


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
