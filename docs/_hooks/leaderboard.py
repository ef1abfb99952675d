"""MkDocs hook: the leaderboard's generated pages (``leaderboard/*.md``, its notes and the pictures they show) join
the site under ``leaderboard/``, and a docs page's link into the repository's ``leaderboard/`` folder (``../leaderboard/
seer.md``, right on GitHub) is pointed at that copy, so one link works in both places."""

from __future__ import annotations

import posixpath
import re
from pathlib import Path

from mkdocs.structure.files import File

LEADERBOARD = Path(__file__).resolve().parents[2] / "leaderboard"
SITE_FOLDER = "leaderboard"
LINK = re.compile(r"\]\(([^)#\s]+)")


def _linked_files(page: Path) -> set[Path]:
    """Files of the leaderboard that ``page`` links to (pictures, a benchmark's JSON), which exist."""
    found = set()
    for target in LINK.findall(page.read_text(encoding="utf-8")):
        path = (page.parent / target).resolve()
        if "://" not in target and path.is_file() and LEADERBOARD in path.parents:
            found.add(path)
    return found


def on_files(files, config):
    """Add every leaderboard page and each file one of them links to."""
    pages = sorted(LEADERBOARD.glob("*.md")) + sorted(LEADERBOARD.glob("notes/*.md"))
    wanted = set(pages)
    for page in pages:
        wanted |= _linked_files(page)
    for path in sorted(wanted):
        uri = f"{SITE_FOLDER}/{path.relative_to(LEADERBOARD).as_posix()}"
        files.append(File.generated(config, uri, abs_src_path=str(path)))
    return files


def on_page_markdown(markdown, page, config, files):
    """``../leaderboard/X`` (relative to the page's place in the repository) -> the site's ``leaderboard/X``."""
    docs = Path(config["docs_dir"]).resolve()
    here = (docs / page.file.src_uri).parent

    def rewrite(match: re.Match) -> str:
        target = match.group(1)
        path = Path(posixpath.normpath((here / target).as_posix()))
        if "://" in target or LEADERBOARD not in (path, *path.parents):
            return match.group(0)
        inside = (docs / SITE_FOLDER / path.relative_to(LEADERBOARD)).as_posix()
        return "](" + posixpath.relpath(inside, here.as_posix())

    return LINK.sub(rewrite, markdown)
