"""``zoo/`` has no import circle: no two modules import each other, directly or through others.

A circle makes a module's names depend on which module of the circle was imported first, and it ties the modules
into one unit that cannot be read, tested or moved alone (the runner used to be one: ``zoo.cli.evaluate`` and
``zoo.cli.main``; ``reproduce``, ``matrix*``, ``tune`` and ``verify``). Every import statement counts, at module
level or inside a function: an import moved into a function only hides a circle from the interpreter. Only those
under ``if TYPE_CHECKING:`` are left out (they never run). An import names one module: ``import a.b.c`` and
``from a.b.c import name`` import ``a.b.c``, ``from a.b import c`` imports ``a.b.c`` when that is a module, else
``a.b``. (The enclosing packages that Python runs first are not counted: a package's ``__init__`` that re-exports
its modules' names would otherwise form a circle with every module of the package that imports a sibling.)"""

from __future__ import annotations

import ast
from pathlib import Path

from zoo_testing import REPO


def module_files(root: Path) -> dict[str, Path]:
    """Module name -> file of every module of the package folder ``root`` (its folder name is the top package)."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement of ``tree``, anywhere, except those under ``if TYPE_CHECKING:``."""
    skipped = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", getattr(node.test, "attr", "")) == "TYPE_CHECKING":
            skipped |= {id(inner) for child in node.body for inner in ast.walk(child)}
    kinds = (ast.Import, ast.ImportFrom)
    return [node for node in ast.walk(tree) if isinstance(node, kinds) and id(node) not in skipped]


def _module_of(name: str, files: dict[str, Path]) -> str | None:
    """The deepest module of the tree that ``name`` (a module, or a name inside one) lies in; None outside it."""
    while name and name not in files:
        name = name.rpartition(".")[0]
    return name or None


def imported_modules(node: ast.Import | ast.ImportFrom, module: str, is_package: bool, files) -> set[str]:
    """The modules of the tree one import statement of ``module`` imports; relative imports resolved."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        base = node.module or ""
        if node.level:
            package = module.split(".") if is_package else module.split(".")[:-1]
            base = ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else []))
        names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in files else base for alias in node.names]
    return {found for name in names if (found := _module_of(name, files)) is not None}


def import_graph(root: Path) -> dict[str, set[str]]:
    """Module -> the modules of the same package tree it imports."""
    files = module_files(root)
    graph: dict[str, set[str]] = {}
    for module, path in files.items():
        targets: set[str] = set()
        for node in _imports(ast.parse(path.read_bytes(), filename=str(path))):
            targets |= imported_modules(node, module, path.name == "__init__.py", files)
        graph[module] = targets - {module}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly-connected components of ``graph`` with more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_zoo_has_no_import_cycle():
    found = cycles(import_graph(REPO / "zoo"))
    assert not found, "import circles in zoo/ (each: modules that import each other):\n" + "\n".join(
        " <-> ".join(component) for component in found
    )


def test_a_circle_through_an_import_inside_a_function_is_found(tmp_path):
    """The check can fail: ``a`` imports ``b`` at module level, ``b`` imports ``a`` inside a function; ``c`` imports
    a name of package ``sub``, whose ``__init__`` imports ``c`` (relative); a ``TYPE_CHECKING`` import and importing
    a package's module from a module the package imports are no circle."""
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from pkg import b\n")
    (package / "b.py").write_text("def later():\n    from pkg.a import thing\n")
    (package / "c.py").write_text("from pkg.sub import helper\n")
    (package / "sub" / "__init__.py").write_text("from .. import c\nfrom . import d\nhelper = 1\n")
    (package / "sub" / "d.py").write_text("import pkg.sub.e\n")
    (package / "sub" / "e.py").write_text("")
    (package / "e.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import f\n")
    (package / "f.py").write_text("import pkg.e\n")
    assert cycles(import_graph(package)) == [["pkg.a", "pkg.b"], ["pkg.c", "pkg.sub"]]
