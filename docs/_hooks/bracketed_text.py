"""MkDocs hook: bracketed text in a docstring that Markdown reads as a reference link stays text.

Python-Markdown reads ``[a] [b]`` as the reference link "a" to the id "b", and mkdocs-autorefs turns an id that no
page defines into a cross-reference to a Python object, which then fails to resolve (a warning, so the strict
build fails). ``zoo.moe.mixture_weights``' docstring writes optional factors that way: ``[* expert_scale] [/ row
sum]``. An id with whitespace in it can never name a Python object or a heading anchor, so such a link is put back
as the text it was; any other unresolved cross-reference still fails the build.
"""

from __future__ import annotations

import html
import re

AUTOREF = re.compile(r"<autoref (?P<attrs>[^>]*)>(?P<title>.*?)</autoref>", re.DOTALL)
IDENTIFIER = re.compile(r'\bidentifier="(?P<id>[^"]*)"')


def _as_text(match: re.Match) -> str:
    found = IDENTIFIER.search(match.group("attrs"))
    if found is None or "slug=" in match.group("attrs") or not re.search(r"\s", html.unescape(found.group("id"))):
        return match.group(0)
    return f"[{match.group('title')}] [{found.group('id')}]"


def on_page_content(content, page, config, files):
    """Every ``<autoref>`` whose identifier holds whitespace -> its bracketed source text."""
    return AUTOREF.sub(_as_text, content)
