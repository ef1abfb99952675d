"""Where a task's records belong: the leaderboard of the project that holds the task's package, and its commit.

The core's tasks live in the moe-zoo checkout: their records go to its ``leaderboard/`` and name its commit
(``zoo.registry.repository_root``, ``zoo.runinfo.git_commit``). A third-party plugin's records go to the leaderboard
of its own project, found by walking up from its spec module's file to the first folder holding ``pyproject.toml``
or ``.git``, and name that project's commit (``+dirty`` when a file of the plugin's package or its
``pyproject.toml`` differs from it); their ``source_hash`` covers the plugin's code as it covers the core's
(``zoo.code_closure`` follows every ``zoo.tasks`` entry point's package). A plugin installed from a wheel (under
``site-packages``) has no project around it: its leaderboard is the current directory's, as an installed ``zoo``'s
is, and its records name the commit the core's would.
"""

from __future__ import annotations

import importlib.util
import subprocess
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path

from zoo.registry import ENTRY_POINT_GROUP, TaskSpec, checkout_root, repository_root
from zoo.runinfo import dirty_sources, git_commit

PROJECT_MARKS = ("pyproject.toml", ".git")
INSTALLED = ("site-packages", "dist-packages")


@dataclass(frozen=True)
class TaskHome:
    """The project a task's records belong to: ``root`` holds its ``leaderboard/``; ``package`` is the folder of
    the task's top-level package when the task lives in a project of its own (a plugin's checkout), else None (the
    core's tasks, and a plugin installed from a wheel), whose records name the core's commit."""

    root: Path
    package: Path | None = None

    @property
    def leaderboard(self) -> Path:
        """``<root>/leaderboard``: where the task's records and page go unless ``--leaderboard`` says otherwise."""
        return self.root / "leaderboard"

    def sources(self) -> list[str]:
        """The paths whose changes make the plugin's commit dirty: its package folder and its ``pyproject.toml``."""
        found = [str(self.package)] if self.package is not None else []
        return found + [str(self.root / name) for name in ("pyproject.toml",) if (self.root / name).is_file()]

    def dirty_sources(self) -> list[str]:
        """The plugin's source files that differ from its project's HEAD (modified, staged or untracked; paths as
        git prints them); [] for the core's tasks (``refuse_dirty_tree`` checks those) or outside git."""
        return (dirty_sources(self.root, self.sources()) or []) if self.package is not None else []

    def commit(self) -> str:
        """The commit the task's records name: its project's HEAD (``+dirty`` with ``dirty_sources``), "" outside
        git; the core's (``git_commit``) for the core's tasks and wheel-installed plugins."""
        if self.package is None:
            return git_commit()
        head = _head(self.root)
        return head + ("+dirty" if head and self.dirty_sources() else "")


def _head(root: Path) -> str:
    """The commit of ``root``'s git HEAD; "" outside git."""
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return ""
    return out.stdout.strip() if out.returncode == 0 else ""


def spec_module(name: str) -> tuple[str, Path] | None:
    """(module name, file) of the module that task ``name``'s ``zoo.tasks`` entry point names; None when there is no
    such entry point or the module has no file. Imports nothing but the module's parent packages."""
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name == name:
            module = ep.value.partition(":")[0]
            found = importlib.util.find_spec(module)
            return (module, Path(found.origin).resolve()) if found is not None and found.origin else None
    return None


def top_package_folder(module: str, file: Path) -> Path:
    """The folder of ``module``'s top-level package (``a.b.spec`` in ``.../a/b/spec.py`` -> ``.../a``)."""
    depth = module.count(".") + (file.name == "__init__.py")
    return file.parents[depth - 1] if depth else file.parent


def project_of(path: Path) -> Path | None:
    """The nearest folder at or above ``path`` holding ``pyproject.toml`` or ``.git``; None when there is none, or
    when ``path`` lies in installed packages (``site-packages``): a wheel's files belong to no project."""
    for folder in (path, *path.parents):
        if folder.name in INSTALLED:
            return None
        if any((folder / mark).exists() for mark in PROJECT_MARKS):
            return folder
    return None


def task_home(spec: TaskSpec) -> TaskHome:
    """Where ``spec``'s records belong (see the module docstring): the core's checkout for the tasks in it (and for
    a task whose entry point cannot be found), the current directory for a task installed with no project around
    it, else the project holding its package."""
    found = spec_module(spec.name)
    if found is None:
        return TaskHome(repository_root())
    module, file = found
    project, core = project_of(file.parent), checkout_root()
    if project is None:
        return TaskHome(Path.cwd())
    if core is not None and project == core.resolve():
        return TaskHome(repository_root())
    return TaskHome(project, top_package_folder(module, file))
