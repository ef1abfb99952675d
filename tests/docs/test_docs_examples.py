"""Every ``python`` block of the documentation site runs as written (issue 60: "every example in the docs runs in
the test suite"). The blocks of one page run in order in one namespace, as a reader pastes them into one session,
in an empty working directory; a page's ``# file: PATH`` blocks are written out as a package and imported. A block
that reads a dataset says so (``<!-- needs-data: NAME -->``) and its page skips where that dataset is absent; the
few blocks that cannot run here opt out with ``<!-- not-run: REASON -->``, and are listed below."""

from __future__ import annotations

import importlib
import sys

import pytest
from docs_blocks import DOCS, Block, all_blocks, page_blocks, pages
from zoo_testing import need_dataset

# (page, first line) of every block that opts out, and why; a new opt-out must be added here, so they stay few
NOT_RUN = {
    ("expert-parallel.md", "import torch.distributed as dist"): "needs a process group of several ranks",
    ("tasks/mammoth.md", "from scipy.io import loadmat"): "reads the reader's own tiger.mat",
    ("writing-a-router.md", "import torch"): "needs the page's plugin pip-installed (test_router_plugins runs it)",
    ("writing-a-task.md", "from zoo.registry import MatrixRow"): "an excerpt of a spec",
}

PAGES_WITH_CODE = [page for page in pages() if any("not-run" not in b.marks for b in page_blocks(page))]


def _module_name(path: str) -> str:
    """``my_package/__init__.py`` -> ``my_package``; ``my_package/spec.py`` -> ``my_package.spec``."""
    parts = path.removesuffix(".py").split("/")
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_file_blocks(blocks: list[Block], root, monkeypatch) -> None:
    """Write the ``# file:`` blocks under ``root`` and import each as its module; forget them afterwards."""
    for block in blocks:
        target = root / block.file
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(block.code)
    monkeypatch.syspath_prepend(str(root))
    names = [_module_name(b.file) for b in blocks if b.file.endswith(".py")]
    try:
        for name in names:
            importlib.import_module(name)
    finally:
        for name in [m for m in sys.modules if m.split(".")[0] in {n.split(".")[0] for n in names}]:
            del sys.modules[name]


def run_blocks(blocks: list[Block]) -> dict:
    """Execute ``blocks`` in order in one fresh namespace; a failure names the page and line of its block."""
    namespace = {"__name__": "__main__"}
    for block in blocks:
        code = compile(block.code, f"docs/{block.page}:{block.line}", "exec")
        exec(code, namespace)  # running the documentation's examples is this test's point
    return namespace


@pytest.mark.parametrize("page", PAGES_WITH_CODE, ids=[p.relative_to(DOCS).as_posix() for p in PAGES_WITH_CODE])
def test_every_python_block_of_the_page_runs(page, tmp_path, monkeypatch):
    blocks = [b for b in page_blocks(page) if "not-run" not in b.marks]
    for block in blocks:
        for name in block.marks.get("needs-data", []):
            need_dataset(name)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["zoo"])  # `zoo fit` through zoo.cli.main rewrites it
    files = [b for b in blocks if b.file]
    if files:
        import_file_blocks(files, tmp_path / "package", monkeypatch)
    run_blocks([b for b in blocks if not b.file])


def test_only_the_listed_blocks_opt_out():
    opted_out = {(b.page, b.first_line): b.marks["not-run"][0] for b in all_blocks() if "not-run" in b.marks}
    assert sorted(opted_out) == sorted(NOT_RUN), "a new <!-- not-run --> block must be listed in NOT_RUN (or run)"
    assert all(reason.strip() for reason in opted_out.values())


def test_the_site_has_examples_that_run():
    """The guides' examples are found (a fence the parser missed would make the test above vacuous)."""
    run = [b for b in all_blocks() if "not-run" not in b.marks]
    assert {b.page for b in run} >= {"moe.md", "predict.md", "writing-a-task.md", "tasks/mammoth.md"}
    assert len(run) >= 20


def test_a_failing_block_fails_naming_its_page_and_line():
    bad = Block("moe.md", 7, "from zoo.moe import MoE\nMoE(dim=4, hidden=8, num_experts=2, router='no_such')\n")
    with pytest.raises(Exception) as err:
        run_blocks([bad])
    assert any(frame.path == "docs/moe.md:7" for frame in err.traceback)
