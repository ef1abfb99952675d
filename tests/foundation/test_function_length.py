"""No function of the core (``zoo/``) is longer than 80 lines: one job a function, as the frame issue asks."""

from __future__ import annotations

import ast
from pathlib import Path

from zoo_testing import REPO

LIMIT = 80


def long_functions(root: Path, limit: int = LIMIT) -> list[str]:
    """``path:line name (N lines)`` of every function or method under ``root`` longer than ``limit`` lines."""
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = node.end_lineno - node.lineno + 1
                if length > limit:
                    found.append(f"{path.relative_to(root.parent)}:{node.lineno} {node.name} ({length} lines)")
    return found


def test_no_core_function_is_longer_than_80_lines():
    assert long_functions(REPO / "zoo") == []


def test_the_check_names_a_long_function(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    body = "\n".join(f"    x{i} = {i}" for i in range(LIMIT))
    (package / "long.py").write_text(f"def too_long():\n{body}\n")
    assert long_functions(package) == [f"pkg/long.py:1 too_long ({LIMIT + 1} lines)"]
