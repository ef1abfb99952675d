"""The test tiers stay honest. ``pytest -m "not slow"`` is the fast tier a developer runs; ``bash scripts/test.sh``
runs everything, the ``slow`` tier included. A test joins the slow tier with ``pytest.mark.slow(reason=...)`` (on a
test, or as a module's ``pytestmark``) saying what makes it slow, so that every test left out of the fast tier says
why; the slow tier stays a small part of the suite, and the marks sit where pytest reads them.

Read from the sources (no collection), so this file runs in a second."""

from __future__ import annotations

import ast
from pathlib import Path

from zoo_testing import REPO

TESTS = REPO / "tests"
# at most this share of the suite's test functions may be in the slow tier: the fast tier must keep checking most
# claims itself (the slow tier is the end-to-end runs, not a place to park whatever got slow)
SLOW_SHARE = 0.15
FAST_COMMAND = 'python -m pytest -q -n 2 --dist loadfile -m "not slow"'


def _is_slow_mark(node: ast.AST) -> bool:
    """``pytest.mark.slow``, called or not."""
    target = node.func if isinstance(node, ast.Call) else node
    return (
        isinstance(target, ast.Attribute)
        and target.attr == "slow"
        and isinstance(target.value, ast.Attribute)
        and target.value.attr == "mark"
    )


def _reason(node: ast.AST) -> str:
    """The ``reason=`` of a called mark, else ''."""
    if not isinstance(node, ast.Call):
        return ""
    for keyword in node.keywords:
        if keyword.arg == "reason" and isinstance(keyword.value, ast.Constant) and isinstance(keyword.value.value, str):
            return keyword.value.value.strip()
    return ""


def _is_fixture(decorator: ast.AST) -> bool:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    return isinstance(target, ast.Attribute) and target.attr == "fixture"


def _names_of_slow_marks(tree: ast.Module) -> set[str]:
    """Module-level names bound to a slow mark (``E2E = pytest.mark.slow(reason=...)``), used as ``@E2E``."""
    names = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and _is_slow_mark(node.value):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name) and t.id != "pytestmark")
    return names


def _module_is_slow(tree: ast.Module) -> bool:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets):
            marks = node.value.elts if isinstance(node.value, ast.List | ast.Tuple) else [node.value]
            if any(_is_slow_mark(m) for m in marks):
                return True
    return False


def survey(root: Path = TESTS) -> dict:
    """What the sources under ``root`` say about the tiers: ``problems`` (lines that break the rules), ``tests``
    (test functions) and ``slow`` (those in the slow tier, by a module's mark or their own)."""
    problems, tests, slow = [], 0, 0
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        where = path.relative_to(root.parent).as_posix()
        called = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call) and _is_slow_mark(n)}
        for node in ast.walk(tree):
            if _is_slow_mark(node) and id(node) not in called and not _reason(node):
                problems.append(f"{where}:{node.lineno}: pytest.mark.slow without a reason=")
        if not path.name.startswith("test_"):
            continue
        module_slow, aliases = _module_is_slow(tree), _names_of_slow_marks(tree)
        for node in tree.body:
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            own = [d for d in node.decorator_list if _is_slow_mark(d) or (isinstance(d, ast.Name) and d.id in aliases)]
            if own and any(_is_fixture(d) for d in node.decorator_list):
                problems.append(f"{where}:{node.lineno}: a mark on fixture {node.name} does nothing: mark its tests")
            if node.name.startswith("test_"):
                tests += 1
                slow += bool(module_slow or own)
    return {"problems": problems, "tests": tests, "slow": slow}


def test_every_slow_mark_says_why_and_sits_on_a_test():
    assert survey()["problems"] == []


def test_the_slow_tier_is_a_small_part_of_the_suite():
    found = survey()
    assert found["slow"] > 0, "no test is marked slow: the fast tier is the whole suite"
    share = found["slow"] / found["tests"]
    assert share <= SLOW_SHARE, (
        f"{found['slow']} of {found['tests']} test functions ({share:.0%}) are in the slow tier, over "
        f"{SLOW_SHARE:.0%}: make tests cheaper instead of moving them out of the fast tier"
    )


def test_the_survey_catches_a_bare_mark_a_mark_on_a_fixture_and_counts_a_slow_module(tmp_path):
    (tmp_path / "test_bare.py").write_text("import pytest\n\n\n@pytest.mark.slow\ndef test_a():\n    pass\n")
    fixture = "import pytest\n\n\n@pytest.fixture\n@pytest.mark.slow(reason='x')\ndef f():\n    pass\n"
    (tmp_path / "test_fixture.py").write_text(fixture)
    module = "import pytest\n\npytestmark = pytest.mark.slow(reason='a real fit')\n\n\ndef test_b():\n    pass\n"
    (tmp_path / "test_module.py").write_text(module)
    alias = "import pytest\n\nE2E = pytest.mark.slow(reason='r')\n\n\n@E2E\ndef test_c():\n    pass\n\n\n"
    (tmp_path / "test_alias.py").write_text(alias + "def test_d():\n    pass\n")
    found = survey(tmp_path)
    assert [p.split(": ", 1)[1] for p in found["problems"]] == [
        "pytest.mark.slow without a reason=",
        "a mark on fixture f does nothing: mark its tests",
    ], found["problems"]
    assert (found["tests"], found["slow"]) == (4, 3)  # test_a, test_b, test_c slow; test_d fast


def test_the_docs_give_the_fast_tier_and_the_full_suite():
    for page in ("README.md", "docs/index.md"):
        text = (REPO / page).read_text()
        assert FAST_COMMAND in text and "bash scripts/test.sh" in text, page
