"""Which source files made a run: the import closure of its config, and a hash over those files.

A record's ``source_hash`` must change when code that can change its numbers changes, and only then: hashing all
of ``zoo/`` and the task's folder (the first version) marked every record of every task as "older code" whenever
any task was added or any leaderboard page's renderer was edited. This module follows the code a run executes:

* roots: every ``class_path`` in the run's resolved config (model, data, callbacks, ...) and the fit-then-test
  driver ``zoo.cli.fit_test``;
* closure: the ``import`` / ``from ... import`` statements of each module (anywhere in the file, so imports inside
  functions count), every string constant that spells a first-party module (``"<package>.x.y:Class"``: specs and
  registries name classes this way), and the ``__init__.py`` of every enclosing package (it runs on import);
* a package whose ``__init__`` defines a module-level ``__getattr__`` (lazy exports, PEP 562, as ``zoo.moe``
  does) contributes every module below it, since any of them may be loaded by name.

Only first-party packages are followed: ``zoo`` and the top-level packages of the registered task plugins (their
``zoo.tasks`` entry points); third-party code is pinned by ``versions``. Files
are found by path, without importing anything, so the hash of another checkout (a git worktree at an old
commit) can be computed by passing its package folders. Written by hand: no library computes an import closure
over a source tree without executing it (``modulefinder`` follows third-party imports and needs the modules to
resolve on ``sys.path``).
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

DRIVER = "zoo.cli.fit_test"


def first_party() -> tuple[str, ...]:
    """``zoo`` and the top-level package of every ``zoo.tasks`` entry point, sorted."""
    from importlib.metadata import entry_points

    plugins = {ep.value.partition(":")[0].split(".")[0] for ep in entry_points(group="zoo.tasks")}
    return tuple(sorted({"zoo", *plugins}))


def _module_string(tops) -> re.Pattern:
    names = "|".join(re.escape(t) for t in sorted(tops))
    return re.compile(rf"^((?:{names})(?:\.[A-Za-z_]\w*)+)(?::[A-Za-z_]\w*)?$")


def installed_roots() -> dict[str, Path]:
    """Top-level first-party package name -> its folder, as this interpreter imports them."""
    roots: dict[str, Path] = {}
    for name in first_party():
        found = importlib.util.find_spec(name)
        if found is not None and found.submodule_search_locations:
            roots[name] = Path(next(iter(found.submodule_search_locations))).resolve()
    return roots


class _Tree:
    """Module names <-> files of the first-party packages under ``roots``."""

    def __init__(self, roots: Mapping[str, Path]):
        self.roots = {name: Path(folder) for name, folder in roots.items()}

    def file(self, module: str) -> Path | None:
        top, *rest = module.split(".")
        if top not in self.roots:
            return None
        base = self.roots[top].joinpath(*rest)
        for candidate in (base / "__init__.py", base.with_suffix(".py")):
            if candidate.is_file():
                return candidate
        return None

    def is_package(self, module: str) -> bool:
        found = self.file(module)
        return found is not None and found.name == "__init__.py"

    def submodules(self, package: str) -> list[str]:
        folder = self.file(package).parent
        names = []
        for path in sorted(folder.rglob("*.py")):
            if "__pycache__" in path.parts:
                continue
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            names.append(".".join([package, *parts]))
        return names


def _imports(tree: ast.AST, module: str, is_package: bool, module_string: re.Pattern) -> set[str]:
    """Module names a source file may load: its imports (relative ones resolved) and module-like strings."""
    package = module if is_package else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base_parts = package.split(".")
                base_parts = base_parts[: len(base_parts) - (node.level - 1)]
                base = ".".join(base_parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names if alias.name != "*")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            match = module_string.match(node.value)
            if match:
                found.add(match.group(1))
    return found


def _has_lazy_exports(tree: ast.Module) -> bool:
    return any(isinstance(node, ast.FunctionDef) and node.name == "__getattr__" for node in tree.body)


def _config_class_paths(config: object) -> set[str]:
    """The modules of every ``class_path`` in a resolved config (nested dicts and lists)."""
    found: set[str] = set()
    if isinstance(config, Mapping):
        for key, value in config.items():
            if key == "class_path" and isinstance(value, str):
                found.add(value.rpartition(".")[0] if ":" not in value else value.partition(":")[0])
            else:
                found |= _config_class_paths(value)
    elif isinstance(config, list | tuple):
        for value in config:
            found |= _config_class_paths(value)
    return found


def closure(
    roots: Iterable[str], package_roots: Mapping[str, Path] | None = None, stop: Iterable[str] = ()
) -> dict[str, Path]:
    """Every first-party module reachable from ``roots`` (module names), name -> file. Modules in ``stop`` are
    neither included nor followed (a benchmark's record writer: it cannot change the numbers it writes down)."""
    tree = _Tree(package_roots if package_roots is not None else installed_roots())
    module_string = _module_string(tree.roots)
    seen: dict[str, Path] = {}
    stopped = set(stop)
    pending = list(roots)
    while pending:
        name = pending.pop()
        if name in seen or name in stopped:
            continue
        path = tree.file(name)
        if path is None:  # a class inside a module, a third-party name, or a module that does not exist
            parent = name.rpartition(".")[0]
            if parent and parent.split(".")[0] in tree.roots:
                pending.append(parent)
            continue
        seen[name] = path
        parts = name.split(".")
        pending.extend(".".join(parts[:i]) for i in range(1, len(parts)))  # enclosing packages' __init__
        source = ast.parse(path.read_bytes(), filename=str(path))
        is_package = path.name == "__init__.py"
        pending.extend(_imports(source, name, is_package, module_string))
        if is_package and _has_lazy_exports(source):
            pending.extend(tree.submodules(name))
    return seen


def run_roots(config: Mapping) -> frozenset[str]:
    """The modules a run's closure starts from: the fit driver and every ``class_path`` of its config. Two
    configs with the same roots execute the same files (``source_hash`` depends on nothing else)."""
    return frozenset({DRIVER, *_config_class_paths(config)})


def run_sources(config: Mapping, package_roots: Mapping[str, Path] | None = None) -> dict[str, Path]:
    """The first-party source files a run of this resolved config executes (see the module docstring)."""
    return closure(run_roots(config), package_roots)


def closure_hash(
    roots: Iterable[str], package_roots: Mapping[str, Path] | None = None, stop: Iterable[str] = ()
) -> str:
    """sha256 over the sorted (module name, bytes) of the closure of ``roots`` (``stop``: see ``closure``)."""
    digest = hashlib.sha256()
    for name, path in sorted(closure(roots, package_roots, stop).items()):
        digest.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def source_hash(config: Mapping, package_roots: Mapping[str, Path] | None = None) -> str:
    """sha256 over the sorted (module name, bytes) of ``run_sources(config)``: equal for two runs whose code is
    byte-identical, whatever the commit or the files of other tasks."""
    return closure_hash(run_roots(config), package_roots)
