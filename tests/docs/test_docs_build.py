"""The documentation site builds with ``mkdocs build --strict`` (a warning fails it: a broken link, a reference
that does not resolve, a docstring the API plugin cannot read) into a temporary folder, and its zoo.moe reference
page renders an entry for every public name. Also the two MkDocs hooks in docs/_hooks that let the existing
docstrings render as written."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import pytest
from docs_blocks import DOCS, REPO
from test_docs_reference import public_names
from zoo_testing import hang_guard


def _hook(name: str):
    spec = importlib.util.spec_from_file_location(f"docs_hook_{name}", DOCS / "_hooks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow(reason="builds the whole site (mkdocs --strict, every API page)")
def test_the_site_builds_strictly_with_a_reference_entry_for_every_public_name(tmp_path):
    site = tmp_path / "site"
    had_site = (REPO / "site").exists()
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    command = [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)]
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=hang_guard(100))
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    assert "WARNING" not in done.stderr, done.stderr[-4000:]
    reference = (site / "reference" / "moe" / "index.html").read_text()
    assert [name for name in sorted(public_names()) if f'id="zoo.moe.{name}"' not in reference] == []
    for page in ("reference/api", "reference/predict", "reference/trained", "leaderboard/seer", "tasks/seer"):
        assert (site / page / "index.html").is_file(), page
    assert (REPO / "site").exists() == had_site  # the site went to the temporary folder, not into the checkout


def test_indented_lines_under_a_heading_line_keep_their_lines():
    as_markdown = _hook("plain_docstrings").as_markdown
    text = "Layout (E experts):\n    experts.w1 (E, d, h)     ffn\n    experts.experts.<e>.*    ModuleList\nAfter."
    assert as_markdown(text).splitlines() == [
        "Layout (E experts):",
        "",
        "```text",
        "experts.w1 (E, d, h)     ffn",
        "experts.experts.<e>.*    ModuleList",
        "```",
        "",
        "After.",
    ]


def test_tags_are_escaped_outside_code_and_lists_stand_apart():
    as_markdown = _hook("plain_docstrings").as_markdown
    text = "Writes ``<name>.csv`` or <name>.json, :class:`~zoo.moe.MoE`:\n- one\n- two\nThen a sentence."
    assert as_markdown(text).splitlines() == [
        "Writes ``<name>.csv`` or &lt;name>.json, `zoo.moe.MoE`:",
        "",
        "- one",
        "- two",
        "",
        "Then a sentence.",
    ]


def test_google_sections_and_code_blocks_are_left_to_the_parser():
    as_markdown = _hook("plain_docstrings").as_markdown
    text = "Do it.\n\nArgs:\n    x: tokens (B, N, d).\n        More on x <T>.\n\nExample::\n\n    y = f(x)  # <x>\n"
    assert as_markdown(text) == text.rstrip("\n").replace("x <T>", "x &lt;T>")


def test_an_autoref_whose_identifier_has_spaces_is_text_again():
    on_page_content = _hook("bracketed_text").on_page_content
    html = '<p>w <autoref identifier="/ row sum">* scale</autoref> <autoref identifier="zoo.moe.MoE">MoE</autoref></p>'
    result = on_page_content(html, None, None, None)
    assert result == '<p>w [* scale] [/ row sum] <autoref identifier="zoo.moe.MoE">MoE</autoref></p>'
