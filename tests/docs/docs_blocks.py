"""The documentation site's pages and their fenced ``python`` blocks, with the markers a block may carry.

A block is a fence that opens with a line exactly ```` ```python ```` and closes with ```` ``` ````. HTML comments on
the lines right above it mark it:

- ``<!-- not-run: REASON -->``: the block is not run (tests/docs/test_docs_examples.py lists every such block);
- ``<!-- needs-data: NAME -->``: it reads dataset NAME, and its page's test skips, saying why, where that is absent.

A block whose first line is ``# file: PATH`` is a file of a package the page builds (a plugin), not a script.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
MARKER = re.compile(r"^<!-- ([a-z-]+): (.+?) -->$")
MARKERS = ("not-run", "needs-data")
FILE_LINE = re.compile(r"^# file: (\S+)$")


@dataclass
class Block:
    """One fenced ``python`` block: its page (relative to docs/), the line of its fence, its code and markers."""

    page: str
    line: int
    code: str
    marks: dict[str, list[str]] = field(default_factory=dict)

    @property
    def first_line(self) -> str:
        return self.code.splitlines()[0] if self.code else ""

    @property
    def file(self) -> str | None:
        """``PATH`` of a ``# file: PATH`` block, else None."""
        found = FILE_LINE.match(self.first_line)
        return found.group(1) if found else None


def pages() -> list[Path]:
    """Every Markdown page of the site's sources."""
    return sorted(DOCS.rglob("*.md"))


def page_blocks(page: Path) -> list[Block]:
    """The ``python`` blocks of ``page`` in order; ValueError for an unknown marker or an unclosed fence."""
    lines = page.read_text(encoding="utf-8").splitlines()
    name = page.relative_to(DOCS).as_posix()
    blocks, i = [], 0
    while i < len(lines):
        if lines[i] != "```python":
            i += 1
            continue
        marks: dict[str, list[str]] = {}
        j = i - 1
        while j >= 0 and (found := MARKER.match(lines[j])):
            if found.group(1) not in MARKERS:
                raise ValueError(f"{name}:{j + 1}: unknown marker {found.group(1)!r}; known: {', '.join(MARKERS)}")
            marks.setdefault(found.group(1), []).append(found.group(2))
            j -= 1
        end = next((k for k in range(i + 1, len(lines)) if lines[k] == "```"), None)
        if end is None:
            raise ValueError(f"{name}:{i + 1}: a python block that is never closed")
        blocks.append(Block(name, i + 1, "\n".join(lines[i + 1 : end]) + "\n", marks))
        i = end + 1
    return blocks


def all_blocks() -> list[Block]:
    return [block for page in pages() for block in page_blocks(page)]
