"""Clean copies of the source at a commit, and what a probe worker needs to import from one.

A commit's tree is written with ``git archive`` (only committed content: a clean checkout by construction; it
writes nothing into the repository, and a killed run leaves no worktree registered there). Its packages are
mapped the way ``pyproject.toml``'s ``package-dir`` maps them at that commit (``zoo`` -> ``zoo``, the task
package -> ``tasks``, its ``configs`` sub-package -> ``configs``): a shim folder of symlinks that goes first on the
worker's ``PYTHONPATH``, and the package roots ``zoo.code_closure`` hashes the tree with.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tarfile
import tomllib
from collections.abc import Mapping
from functools import cached_property
from pathlib import Path

from zoo.code_closure import closure_hash, run_roots
from zoo.errors import ConfigError

# What a run imports or reads from the checkout: its packages, configs and the project file (``package-dir``,
# and ``zoo.registry.checkout_root`` knows a checkout by it).
TREE_PATHS = ("zoo", "tasks", "configs", "pyproject.toml")


def git(repo: Path, *args: str) -> str:
    """``git -C repo ARGS``'s stdout; a ConfigError naming the command when it fails."""
    out = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise ConfigError(f"git {' '.join(args)} in {repo}: {out.stderr.strip() or out.returncode}")
    return out.stdout


def commit_of(repo: Path, rev: str) -> str | None:
    """The full sha of ``rev`` in ``repo``, None when the repository does not hold it."""
    out = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"],
        capture_output=True,
        text=True,
        check=False,
    )
    return out.stdout.strip() or None


def package_dirs(root: Path) -> dict[str, str]:
    """``[tool.setuptools] package-dir`` of the project at ``root`` (package -> folder relative to ``root``)."""
    project = root / "pyproject.toml"
    if not project.is_file():
        raise ConfigError(f"{project}: missing; the tree's packages cannot be mapped")
    setuptools = tomllib.loads(project.read_text()).get("tool", {}).get("setuptools", {})
    return dict(setuptools.get("package-dir") or {"zoo": "zoo"})


def package_roots(root: Path) -> dict[str, Path]:
    """Top-level first-party package -> its folder in the tree at ``root`` (what ``zoo.code_closure`` walks)."""
    return {name: root / folder for name, folder in package_dirs(root).items() if "." not in name}


def tree_hash(root: Path, config: Mapping, cache: dict | None = None) -> str:
    """``zoo.code_closure.source_hash`` of ``config``'s run with the packages of the tree at ``root``."""
    roots = run_roots(config)
    key = (str(root), roots)
    if cache is not None and key in cache:
        return cache[key]
    found = closure_hash(roots, package_roots(root))
    if cache is not None:
        cache[key] = found
    return found


def extract(repo: Path, commit: str, dest: Path) -> Path:
    """Write the committed ``TREE_PATHS`` of ``commit`` into ``dest`` (a new folder) with ``git archive``."""
    listed = set(git(repo, "ls-tree", "--name-only", commit).split())
    paths = [p for p in TREE_PATHS if p in listed]
    if "zoo" not in paths:
        raise ConfigError(f"commit {commit[:10]} holds no zoo/ folder")
    dest.mkdir(parents=True)
    archive = subprocess.Popen(
        ["git", "-C", str(repo), "archive", "--format=tar", commit, "--", *paths], stdout=subprocess.PIPE
    )
    with tarfile.open(fileobj=archive.stdout, mode="r|") as tar:
        tar.extractall(dest, filter="data")
    if archive.wait() != 0:
        raise ConfigError(f"git archive {commit[:10]} failed in {repo}")
    return dest


def make_shim(root: Path, shim: Path) -> Path:
    """A folder that imports the tree at ``root`` by ``package-dir``: ``shim/zoo`` -> ``root/zoo``; a package with
    mapped sub-packages (the task package, whose ``configs`` come from ``root/configs``) becomes a folder of symlinks
    to its own folder's entries plus one per mapped sub-package."""
    if shim.exists():
        shutil.rmtree(shim)
    shim.mkdir(parents=True)
    dirs = package_dirs(root)
    for name, folder in dirs.items():
        if "." in name:
            continue
        subs = {n.partition(".")[2]: f for n, f in dirs.items() if n.startswith(name + ".")}
        if not subs:
            (shim / name).symlink_to(root / folder, target_is_directory=True)
            continue
        (shim / name).mkdir()
        for entry in sorted((root / folder).iterdir()):
            if entry.name != "__pycache__" and entry.name not in subs:
                (shim / name / entry.name).symlink_to(entry)
        for sub, sub_folder in subs.items():
            if "." in sub:
                raise ConfigError(f"package-dir {name}.{sub}: nested mappings are not supported by the probe shim")
            (shim / name / sub).symlink_to(root / sub_folder, target_is_directory=True)
    return shim


def dirty_closure_files(repo: Path, files: list[Path]) -> list[str]:
    """Those of ``files`` (in the working tree of ``repo``) that differ from HEAD or are untracked."""
    rel = []
    for path in files:
        try:
            rel.append(path.resolve().relative_to(repo.resolve()).as_posix())
        except ValueError:
            continue
    if not rel:
        return []
    out = git(repo, "status", "--porcelain", "--untracked-files=all", "--", *rel)
    return sorted(line[3:] for line in out.splitlines() if line.strip())


class Trees:
    """Clean trees of ``repo``'s commits under ``work``, extracted once each (``tree(commit)``)."""

    def __init__(self, repo: Path, work: Path):
        self.repo, self.work = Path(repo), Path(work)
        self.hashes: dict = {}

    @cached_property
    def head(self) -> str:
        head = commit_of(self.repo, "HEAD")
        if head is None:
            raise ConfigError(f"{self.repo}: no commit checked out (HEAD)")
        return head

    def tree(self, commit: str) -> Path:
        """The folder holding ``commit``'s tree (extracted on first use)."""
        dest = self.work / "trees" / commit
        if not dest.is_dir():
            extract(self.repo, commit, dest)
        return dest

    def source_hash(self, commit: str, config: Mapping) -> str:
        """The source fingerprint a run of ``config`` gets from ``commit``'s code."""
        return tree_hash(self.tree(commit), config, self.hashes)

    def working_hash(self, config: Mapping) -> str:
        """The source fingerprint a run of ``config`` gets from ``repo``'s working tree (uncommitted edits too)."""
        return tree_hash(self.repo, config, self.hashes)

    def remove(self) -> None:
        """Delete the trees and what the workers ran in; the workers' logs and result lines stay in ``work``."""
        for name in ("trees", "tree", "shim", "cache", "run"):
            shutil.rmtree(self.work / name, ignore_errors=True)


def worker_env(shim: Path, cache: Path) -> dict[str, str]:
    """The probe worker's environment: the shim first on ``PYTHONPATH``, string hashing fixed (a set's order must not
    differ between the two workers), no bytecode written into the tree, this process's dataset mirror, a cache
    folder of its own (``cache``) and no run folder inherited from a parent run."""
    from zoo.cli.run_dir import RUN_DIR_ENV
    from zoo.data.resolve import data_mirror

    env = {k: v for k, v in os.environ.items() if k != RUN_DIR_ENV}
    env["PYTHONPATH"] = os.pathsep.join([str(shim), *([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])])
    env["PYTHONHASHSEED"] = "0"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    if "ZOO_DATA_MIRROR" not in env:
        mirror = data_mirror()
        if mirror is not None and mirror.is_dir():
            env["ZOO_DATA_MIRROR"] = str(mirror.resolve())
    env["ZOO_CACHE_DIR"] = str(cache)
    return env


def overlay(source: Path, dest: Path) -> Path:
    """``dest`` as a copy-on-write view of the folder ``source``: its folders re-created, its files symlinked. A
    probe reads what the cache holds (downloads, exported experts) and writes its own files (a stage's export)
    into ``dest``: replacing a symlink replaces the link, never the file it points to."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    if not source.is_dir():
        return dest
    for folder, subdirs, files in os.walk(source):
        rel = Path(folder).relative_to(source)
        for name in subdirs:
            (dest / rel / name).mkdir(exist_ok=True)
        for name in files:
            (dest / rel / name).symlink_to(Path(folder) / name)
    return dest
