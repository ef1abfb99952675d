"""Which code produced a record: its source fingerprint, or for older records the git trees at its commit.

Records written before fingerprints existed name only a commit. Two such records share a code version when the
task's package folder and ``zoo/moe`` are the same trees at both commits (git tree ids compare content exactly).
A commit marked ``+dirty``, or one that does not hold the task's folder (the code was uncommitted when the record
was written), gives an unknown version: such a record matches no other.
"""

from __future__ import annotations

import functools
import importlib.util
import subprocess
from pathlib import Path

from zoo.leaderboard.record import RunRecord

UNKNOWN = "unknown"


def task_folder(record: RunRecord, repo: Path) -> str | None:
    """The repository folder of the package that holds the record's model class (``<top>.<domain>``).

    Found where that package is installed from now, relative to ``repo``; a package that no longer imports
    (renamed since) is taken as the folder its dotted name spelled when the record was written.
    """
    model = (record.config or {}).get("model") or {}
    path = model.get("class_path", "") if isinstance(model, dict) else ""
    parts = path.split(".")
    if len(parts) < 3:
        return None
    package = ".".join(parts[:2])
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        spec = None
    if spec is not None and spec.submodule_search_locations:
        location = Path(next(iter(spec.submodule_search_locations))).resolve()
        try:
            return location.relative_to(Path(repo).resolve()).as_posix()
        except ValueError:
            return None
    return "/".join(parts[:2])


@functools.lru_cache(maxsize=4096)
def _tree(repo: str, commit: str, folder: str) -> str | None:
    out = subprocess.run(
        ["git", "-C", repo, "rev-parse", "--verify", "--quiet", f"{commit}^{{tree}}:{folder}"],
        capture_output=True,
        text=True,
        check=False,
    )
    return out.stdout.strip() or None


def code_version(record: RunRecord, repo: Path) -> str:
    """What must match for two records to be one repeatable version: the code (``source_code_version``) and the
    torch thread count the run used (CPU float reductions, e.g. MoE scatter-adds, change with it: a 2-thread
    re-run of a 1-thread record differs in the third decimal), as ``<code>|threads=<n>`` when it is known."""
    threads = (record.machine or {}).get("torch_threads")
    base = source_code_version(record, repo)
    return f"{base}|threads={threads}" if threads else base


def source_code_version(record: RunRecord, repo: Path) -> str:
    """The record's ``source_hash``; else ``tree:<task folder tree>+<zoo/moe tree>`` at its commit; else
    ``unknown:<commit>`` (dirty tree, no commit, or a commit without the task's code)."""
    if record.source_hash:
        return record.source_hash
    commit, folder = record.commit or "", task_folder(record, repo)
    if not commit or commit.endswith("+dirty") or folder is None:
        return f"{UNKNOWN}:{commit}"
    task_tree, core_tree = _tree(str(repo), commit, folder), _tree(str(repo), commit, "zoo/moe")
    if task_tree is None:
        return f"{UNKNOWN}:{commit}"
    return f"tree:{task_tree}+{core_tree}"
