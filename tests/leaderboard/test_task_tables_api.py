"""Tasks declare their page's tables and figures as data (``zoo.leaderboard.tables``) and one renderer draws them
(``zoo.leaderboard.draw``): no module under tasks/ imports the renderer or another internal of ``zoo.leaderboard``."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

from zoo.leaderboard.tables import Column, Examples, Image, Plot, Section, Table
from zoo.registry import discover, load_object

TASKS = Path(__file__).resolve().parents[2] / "tasks"
# what a task may import from zoo.leaderboard: the declarations, how numbers are written, the pages' one comparison
# rule and the targets; from the package itself only its __all__
PUBLIC = ("zoo.leaderboard.tables", "zoo.leaderboard.numbers", "zoo.leaderboard.compare", "zoo.leaderboard.targets")


def refused_imports(source: str) -> list[str]:
    """The imports of ``source`` that reach into ``zoo.leaderboard`` past its public surface."""
    refused = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            refused += [a.name for a in node.names if a.name.startswith("zoo.leaderboard.") and a.name not in PUBLIC]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("zoo.leaderboard"):
            refused += [f"{node.module}.{a.name}" for a in node.names if not _public(node.module, a.name)]
    return refused


def _public(module: str, name: str) -> bool:
    if name.startswith("_"):
        return False
    if module == "zoo.leaderboard":
        return name in importlib.import_module(module).__all__
    exported = getattr(importlib.import_module(module), "__all__", None)
    return module in PUBLIC and (exported is None or name in exported)


def test_no_task_imports_leaderboard_internals():
    refused = {
        str(path.relative_to(TASKS)): found
        for path in sorted(TASKS.rglob("*.py"))
        if (found := refused_imports(path.read_text()))
    }
    assert refused == {}


def test_the_guard_refuses_the_renderer_private_names_and_internal_modules():
    bad = (
        "from zoo.leaderboard.render import fmt_value\n"
        "from zoo.leaderboard.numbers import _private\n"
        "import zoo.leaderboard.results_table\n"
        "from zoo.leaderboard.tables import Page, field\n"
        "from zoo.leaderboard import read_records\n"
    )
    assert refused_imports(bad) == [
        "zoo.leaderboard.render.fmt_value",
        "zoo.leaderboard.numbers._private",
        "zoo.leaderboard.results_table",
    ]


def test_every_task_declares_its_tables_as_data_and_every_function_it_names_exists():
    kinds = (Table, Plot, Image, Examples, Section)
    for load in discover():
        if not (load.spec and load.spec.extra_tables.startswith("zoo_tasks.")):
            continue
        declared = load_object(load.spec.extra_tables)
        assert isinstance(declared, tuple) and all(isinstance(d, kinds) for d in declared), load.name
        for item in declared:
            named = item.function if isinstance(item, Section) else item.draw if isinstance(item, Plot) else None
            assert named is None or callable(load_object(named)), named
            columns = item.columns if isinstance(item, Table) else ()
            assert all(isinstance(c, Column) for c in columns)
