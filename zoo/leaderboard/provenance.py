"""Which code produced a record: its source fingerprint, or for older records the git trees at its commit.

A record re-verified by behaviour (``zoo.reverify``) carries the source hash of the newer code it was verified
against, and says so in its ``verified`` chain: it counts as written by that code. Records written before
fingerprints existed name only a commit. Two such records share a code version when the
task's package folder and ``zoo/moe`` are the same trees at both commits (git tree ids compare content exactly).
A commit marked ``+dirty``, or one that does not hold the task's folder (the code was uncommitted when the record
was written), gives an unknown version: such a record matches no other.
"""

from __future__ import annotations

import functools
import importlib.util
import subprocess
from pathlib import Path

from zoo.code_closure import closure, closure_hash, run_roots
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
    """What must match for two records to be one repeatable version: the code (``source_code_version``), the
    torch thread count the run used (CPU float reductions, e.g. MoE scatter-adds, change with it: a 2-thread
    re-run of a 1-thread record differs in the third decimal) and the CPU model (BLAS picks other kernels on
    another CPU; routing and early stopping turn those last bits into other runs: the C²GMoE re-run from an AMD
    EPYC to an Intel Xeon moved single TU folds by up to 0.2), as ``<code>|threads=<n>|cpu=<model>``, each part
    where the record knows it."""
    machine = record.machine or {}
    version = source_code_version(record, repo)
    if machine.get("torch_threads"):
        version += f"|threads={machine['torch_threads']}"
    if machine.get("cpu"):
        version += f"|cpu={machine['cpu']}"
    return version


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


@functools.lru_cache(maxsize=256)
def _current_hash(roots: frozenset[str]) -> str:
    return closure_hash(roots)


@functools.lru_cache(maxsize=256)
def _current_files(roots: frozenset[str]) -> tuple[Path, ...]:
    return tuple(closure(roots).values())


def written_by_current_code(record: RunRecord) -> bool | None:
    """Whether the record's source fingerprint equals that of the code installed now for its config (the
    checkout a page is rendered from): a record for which this is False was written by code that has changed
    since, so re-running its row may not repeat it. None for a record without a fingerprint (written before
    records carried one): whether its code is the current one cannot be told from the record."""
    if not record.source_hash:
        return None
    return record.source_hash == _current_hash(run_roots(record.config or {}))


@functools.lru_cache(maxsize=1024)
def _changed_since(repo: str, commit: str, files: tuple[str, ...]) -> tuple[str, ...]:
    out = subprocess.run(
        ["git", "-C", repo, "diff", "--name-only", commit, "--", *files], capture_output=True, text=True, check=False
    )
    return tuple(sorted(out.stdout.split())) if out.returncode == 0 else ()


def code_commit(record: RunRecord) -> str:
    """The commit whose code the record's ``source_hash`` names: that of its last re-verification by behaviour
    (``zoo.reverify``: the record was re-stamped to that commit's code), else the commit it was run at."""
    verified = getattr(record, "verified", None) or []
    commit = verified[-1].get("to_commit", "") if verified else record.commit or ""
    return commit.removesuffix("+dirty")


def changed_sources(record: RunRecord, repo: Path) -> tuple[str, ...]:
    """The files of the record's current run closure that differ between the commit of its code (``code_commit``)
    and the checkout (repo paths): what to read before deciding whether its row must be re-run. Empty when the
    commit is unknown here."""
    commit = code_commit(record)
    if not commit:
        return ()
    root = Path(repo).resolve()
    files = []
    for path in _current_files(run_roots(record.config or {})):
        try:
            files.append(path.resolve().relative_to(root).as_posix())
        except ValueError:  # installed outside this checkout
            continue
    return _changed_since(str(root), commit, tuple(sorted(files)))
