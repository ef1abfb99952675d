"""The core (``zoo``, without the ``zoo_tasks`` plugins) imports only what pyproject.toml declares for it: a
module-level import must be a core dependency; an import inside a function (an optional feature, such as Optuna for
``zoo tune``) may also be a package an extra declares, and ``zoo`` then names that extra when it is missing. Read from
the source with ``ast``, so a lazy import is checked too; the bad variants show the check fails."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

from zoo_testing import REPO

from zoo.registry import DISTRIBUTION_OF


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirement_name(line: str) -> str:
    return _normalize(re.split(r"[\s\[<>=!~;]", line.strip(), maxsplit=1)[0])


def _import_names(distributions: set[str]) -> set[str]:
    """The top-level import names the ``distributions`` provide (installed ones from their metadata)."""
    names = {_normalize(d).replace("-", "_") for d in distributions}
    names |= {top for top, dist in DISTRIBUTION_OF.items() if _normalize(dist) in distributions}
    for top, dists in importlib.metadata.packages_distributions().items():
        if any(_normalize(d) in distributions for d in dists):
            names.add(top)
    return names


def _declared(pyproject: dict) -> tuple[set[str], set[str]]:
    """(import names of the core dependencies, import names of every extra's dependencies)."""
    project = pyproject["project"]
    core = {_requirement_name(line) for line in project["dependencies"]}
    extras = {_requirement_name(line) for lines in project["optional-dependencies"].values() for line in lines}
    return _import_names(core), _import_names(extras - {"moe-zoo"})


class _Imports(ast.NodeVisitor):
    """(top-level name, line, inside a function) of every absolute import outside ``if TYPE_CHECKING:``."""

    def __init__(self) -> None:
        self.found: list[tuple[str, int, bool]] = []
        self.depth = 0

    def _function(self, node) -> None:
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _function

    def visit_If(self, node: ast.If) -> None:
        if not (isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"):
            self.generic_visit(node)

    def visit_Import(self, node: ast.Import) -> None:
        self.found += [(alias.name.partition(".")[0], node.lineno, self.depth > 0) for alias in node.names]

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level == 0 and node.module:
            self.found.append((node.module.partition(".")[0], node.lineno, self.depth > 0))


def undeclared_imports(root: Path, core: set[str], extras: set[str]) -> list[str]:
    """``path:line: name`` for each import under ``root`` (the ``zoo`` package) that its place does not allow: the
    core dependencies anywhere; an extra's package inside a function, or anywhere in a ``*_tests.py`` module (a
    test module run by pytest only, which the command that runs it checks for first)."""
    allowed_first_party = {"zoo", "__future__"}
    problems = []
    for path in sorted(root.rglob("*.py")):
        visitor = _Imports()
        visitor.visit(ast.parse(path.read_text(), str(path)))
        for name, line, lazy in visitor.found:
            if name in sys.stdlib_module_names or name in allowed_first_party or name in core:
                continue
            if (lazy or path.name.endswith("_tests.py")) and name in extras:
                continue  # a *_tests.py module is a pytest module (python -m zoo.conformance): only pytest loads it
            where = "inside a function, declared by no extra" if lazy else "at module level, not a core dependency"
            problems.append(f"{path.relative_to(root.parent)}:{line}: {name} ({where})")
    return problems


def _pyproject() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text())


def test_the_core_imports_only_its_declared_dependencies():
    core, extras = _declared(_pyproject())
    assert undeclared_imports(REPO / "zoo", core, extras) == []


def test_the_check_fails_when_a_core_import_is_not_declared():
    """The finding it guards: zoo/utils/folds.py imports scikit-learn; without it among the core dependencies
    the check names that line."""
    pyproject = _pyproject()
    deps = pyproject["project"]["dependencies"]
    pyproject["project"]["dependencies"] = [d for d in deps if _requirement_name(d) != "scikit-learn"]
    core, extras = _declared(pyproject)
    problems = undeclared_imports(REPO / "zoo", core, extras)
    assert any(p.startswith("zoo/utils/folds.py:") and "sklearn (at module level" in p for p in problems), problems


def test_the_check_fails_on_an_optional_package_imported_at_module_level(tmp_path):
    core, extras = _declared(_pyproject())
    package = tmp_path / "zoo"
    package.mkdir()
    (package / "eager.py").write_text("import optuna\n")  # the tune extra's package, but at import time
    (package / "lazy.py").write_text("def f():\n    import optuna\n    import no_such_dist_anywhere\n")
    assert undeclared_imports(package, core, extras) == [
        "zoo/eager.py:1: optuna (at module level, not a core dependency)",
        "zoo/lazy.py:3: no_such_dist_anywhere (inside a function, declared by no extra)",
    ]
