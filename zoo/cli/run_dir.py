"""Where a ``zoo`` run writes: its own folder ``runs/<config>/<YYYYmmdd-HHMMSS>`` (relative to the working
directory), unless ``--trainer.default_root_dir`` names one; and which earlier run ``--ckpt_path last|best``
means: the newest run of the same config, never a file shared by every run."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Sequence
from pathlib import Path

from zoo.errors import ConfigError

RUNS = Path("runs")
CHECKPOINTS = "checkpoints"
# Set by the process that picked a fresh run folder, so that DDP workers (which re-run the command line) and the
# main process write into the same one.
RUN_DIR_ENV = "ZOO_RUN_DIR"
ELSEWHERE = "run zoo from a writable folder, or pass --trainer.default_root_dir DIR to write the run elsewhere"


def _safe_name(part: str) -> str:
    """One path component of a run key: letters, digits and ``._+-`` only, never only dots."""
    cleaned = re.sub(r"[^A-Za-z0-9._+-]", "_", part)
    return cleaned if cleaned.strip(".") else "run"


def run_key(configs: Sequence[str | os.PathLike], model_class: str | None = None) -> str:
    """``configs/<task>/<name>.yaml`` -> ``<task>/<name>``; a config inside a package's ``configs/`` folder is
    named by the package (``<package>/configs/<name>.yaml`` -> ``<package>/<name>``); several configs join with
    ``+``; no config: the model's class name."""
    names = []
    for config in configs:
        path = Path(str(config))
        folder = path.parent.parent if path.parent.name == "configs" else path.parent
        # `..` or `.` (a config beside or above the working directory) must not become a path out of runs/
        parent = _safe_name(folder.name) if folder.name not in ("", ".", "..") else ""
        names.append(f"{parent}/{_safe_name(path.stem)}" if parent else _safe_name(path.stem))
    if not names:
        return (model_class or "run").rpartition(".")[2].lower()
    first, *rest = names
    return "+".join([first, *(name.replace("/", "-") for name in rest)])


def new_run_dir(key: str, root: Path = RUNS) -> Path:
    """Create and return ``root/key/<YYYYmmdd-HHMMSS>`` (``-2``, ``-3``... when that second is taken)."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    parent = root / key
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"cannot create run folder {parent}: {exc.strerror or exc}; {ELSEWHERE}") from None
    for n in range(1, 1000):
        folder = parent / (stamp if n == 1 else f"{stamp}-{n}")
        try:
            folder.mkdir()
            return folder
        except FileExistsError:
            continue
        except OSError as exc:
            raise ConfigError(f"cannot create run folder {folder}: {exc.strerror or exc}; {ELSEWHERE}") from None
    raise ConfigError(f"cannot create a run folder under {parent}: too many runs this second")


def run_checkpoint(run_dir: Path, which: str) -> Path | None:
    """``last.ckpt`` (``which="last"``) or the best-scoring ``best-*.ckpt`` (newest if several) of one run."""
    folder = Path(run_dir) / CHECKPOINTS
    if which == "last":
        path = folder / "last.ckpt"
        return path if path.is_file() else None
    best = sorted(folder.glob("best-*.ckpt"), key=lambda p: p.stat().st_mtime)
    return best[-1] if best else None


def newest_run_checkpoint(key: str, which: str, root: Path = RUNS) -> Path | None:
    """The ``which`` checkpoint of the newest run of config ``key`` that has one."""
    runs = sorted((p for p in (root / key).glob("*") if p.is_dir()), key=lambda p: p.name, reverse=True)
    for run in runs:
        found = run_checkpoint(run, which)
        if found is not None:
            return found
    return None


def run_of_checkpoint(path: Path) -> Path | None:
    """The run folder holding ``<run>/checkpoints/<file>``, else None."""
    path = Path(path)
    return path.parent.parent if path.parent.name == CHECKPOINTS else None


def ensure_writable(folder: Path) -> None:
    """Create ``folder`` and check a file can be written there, before any work is done.

    Raises:
        ConfigError: naming the folder and the reason (read-only, a file in the way, permission denied).
    """
    folder = Path(folder)
    probe = folder / f".zoo-write-test-{os.getpid()}"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise ConfigError(
            f"output folder {folder} is not writable ({exc.strerror or exc}); choose another with "
            "--trainer.default_root_dir"
        ) from None


def shown(path: Path) -> str:
    """``path`` relative to the working directory when inside it (shorter to read and to paste)."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)
