"""Griffe extension (mkdocstrings' ``extensions`` option): the zoo's plain-text docstrings rendered as written.

The docstrings are written for ``help()`` and the source: a line ending in ``:`` followed directly by indented
lines (a shape table, a state-dict layout, an options list), ``-`` bullets right under a sentence, and
placeholders such as ``<e>``. Markdown would run the indented lines into one paragraph, start no list, and read
``<e>`` as an HTML tag (dropping it). This extension rewrites each docstring's text before it is parsed, without
touching the source:

- an indented run under a line (no blank line between) becomes a ``text`` block, kept line by line;
- a bullet right under a sentence gets the blank line Markdown needs to start a list;
- ``<`` that would open an HTML tag outside code is escaped, and Sphinx roles (``:class:`X```) become code.

Google-style sections (``Args:``, ``Returns:``, ``Attributes:``, ...) and ``::`` / fenced code blocks are left to
the docstring parser and Markdown, which read them as intended.
"""

from __future__ import annotations

import re

import griffe

SECTION = re.compile(
    r"^(Args|Arguments|Parameters|Params|Attributes|Returns?|Raises|Yields|Warns|Examples?|Notes?|Warnings?|"
    r"Other Parameters|Receives|Methods|Functions|Classes|Modules|Deprecated):\s*$"
)
TAG_OPENER = re.compile(r"<(?=[A-Za-z_/!])")
CODE_SPAN = re.compile(r"(``.+?``|`[^`]+`)")
SPHINX_ROLE = re.compile(r":(?:class|func|meth|mod|attr|data|exc|obj):`~?([^`]+)`")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _escape_tags(line: str) -> str:
    """``<`` that would open a tag -> ``&lt;``, outside code spans."""
    parts = CODE_SPAN.split(SPHINX_ROLE.sub(r"`\1`", line))
    return "".join(part if i % 2 else TAG_OPENER.sub("&lt;", part) for i, part in enumerate(parts))


def _text_block(lines: list[str], base: int) -> list[str]:
    """Indented lines as a fenced ``text`` block (their own indentation kept, ``code`` marks dropped)."""
    body = [re.sub(r"``(.+?)``", r"\1", line[base:]) for line in lines]
    return ["", "```text", *body, "```", ""]


def as_markdown(text: str) -> str:
    """A plain-text docstring -> Markdown that renders its lines as written (see the module docstring)."""
    lines, out, i = text.splitlines(), [], 0
    fence = code = section = in_list = False
    while i < len(lines):
        line, stripped, base = lines[i], lines[i].strip(), _indent(lines[i])
        i += 1
        if stripped.startswith("```") or fence:
            fence = fence != stripped.startswith("```")  # toggles on the opening and the closing line
            out.append(line)
            continue
        if not stripped:
            out.append(line)
            continue
        after_blank = bool(out) and not out[-1].strip()
        if base == 0:
            code, section = False, bool(SECTION.match(line))
            bullet = line.startswith(("- ", "* "))
            if in_list and not bullet and not after_blank:
                out.append("")  # a sentence after a list is not the last item's continuation
            in_list = bullet
        elif after_blank and not section and (base >= 4 or (len(out) > 1 and out[-2].rstrip().endswith("::"))):
            code = True  # an indented code block (or a ``::`` literal block)
        if code or section or base > 0:
            out.append(line if code else _escape_tags(line))
            continue
        out.append(_escape_tags(line))
        run = []
        while i < len(lines) and lines[i].strip() and _indent(lines[i]) > 0:
            run.append(lines[i])
            i += 1
        if run and line.rstrip().endswith(":") and not bullet:
            out.extend(_text_block(run, min(_indent(r) for r in run)))
        else:
            out.extend(_escape_tags(r) for r in run)
        if i < len(lines) and lines[i].startswith(("- ", "* ")) and not bullet:
            out.append("")
    return "\n".join(out)


class PlainDocstrings(griffe.Extension):
    """Rewrite the docstring of every object of the ``zoo`` package with :func:`as_markdown`."""

    def on_instance(self, *, node, obj, agent, **kwargs) -> None:
        if obj.docstring is not None and obj.path.split(".")[0] in ("zoo", "zoo_tasks"):
            obj.docstring.value = as_markdown(obj.docstring.value)
