"""The API reference covers what the library exports: docs/reference/moe.md has a ``::: zoo.moe.NAME`` entry for
every public name of ``zoo.moe`` (its ``__all__`` and its lazy export table), and every entry names something
that exists; zoo.api, zoo.predict and zoo.trained each have their page. (That each entry renders, without a
warning, is the strict build's job: tests/docs/test_docs_build.py.)"""

from __future__ import annotations

import re

from docs_blocks import DOCS

import zoo.moe

ENTRY = re.compile(r"^::: (zoo\.moe\.[\w.]+)$", re.MULTILINE)
MOE_PAGE = DOCS / "reference" / "moe.md"


def public_names(module=zoo.moe) -> set[str]:
    """Every name ``zoo.moe`` exports: ``__all__`` and the lazy-import table (kept equal by the package)."""
    return set(module.__all__) | set(getattr(module, "_EXPORTS", {}))


def reference_entries(text: str) -> set[str]:
    """The objects a reference page documents (``::: zoo.moe.X`` lines)."""
    return set(ENTRY.findall(text))


def missing_from_reference(names: set[str], text: str) -> list[str]:
    """Public names of zoo.moe without a ``::: zoo.moe.NAME`` entry in ``text``."""
    return sorted(name for name in names if f"zoo.moe.{name}" not in reference_entries(text))


def test_every_public_name_of_zoo_moe_has_a_reference_entry():
    missing = missing_from_reference(public_names(), MOE_PAGE.read_text())
    assert missing == [], f"add '::: zoo.moe.NAME' entries to {MOE_PAGE.relative_to(DOCS.parent)} for: {missing}"


def test_a_name_added_to_zoo_moe_without_an_entry_is_caught(monkeypatch):
    monkeypatch.setattr(zoo.moe, "__all__", [*zoo.moe.__all__, "brand_new_router"])
    assert missing_from_reference(public_names(), MOE_PAGE.read_text()) == ["brand_new_router"]


def test_every_entry_names_an_existing_object():
    import importlib

    for path in sorted(reference_entries(MOE_PAGE.read_text())):
        module, _, name = path.rpartition(".")
        assert hasattr(importlib.import_module(module), name), f"{path} is documented but does not exist"


def test_the_python_api_modules_have_reference_pages():
    for module in ("api", "predict", "trained"):
        assert f"::: zoo.{module}\n" in (DOCS / "reference" / f"{module}.md").read_text()
