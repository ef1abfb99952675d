"""A record's source hash follows the code its run executes, and nothing else (issue 17 item 2): the config's
classes, what they import (also inside functions, relatively, or by a "module:Class" string), the enclosing
packages' __init__ files, every module of a lazily-exporting package, and the fit-then-test driver."""

import pytest

from zoo.code_closure import DRIVER, closure, installed_roots, run_sources, source_hash


def _write(root, files):
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


@pytest.fixture()
def tree(tmp_path):
    _write(
        tmp_path,
        {
            "zoo/__init__.py": "",
            "zoo/cli/__init__.py": "",
            "zoo/cli/fit_test.py": "from zoo.core import train\n",
            "zoo/core.py": "def train():\n    from . import lazy_helper\n",
            "zoo/lazy_helper.py": "X = 1\n",
            "zoo/render.py": "PAGE = 'not run by a fit'\n",
            "zoo/lazy/__init__.py": "def __getattr__(name):\n    raise AttributeError(name)\n",
            "zoo/lazy/deep/one.py": "",
            "tasks/__init__.py": "",
            "tasks/a/__init__.py": "",
            "tasks/a/model.py": "import zoo.lazy\nfrom .layers import Block\nTARGETS = 'zoo_tasks.a.extra:Thing'\n",
            "tasks/a/layers.py": "class Block: ...\n",
            "tasks/a/extra.py": "class Thing: ...\n",
            "tasks/a/unused.py": "",
            "tasks/b/__init__.py": "",
            "tasks/b/model.py": "",
        },
    )
    return {"zoo": tmp_path / "zoo", "zoo_tasks": tmp_path / "tasks"}


CONFIG = {"model": {"class_path": "zoo_tasks.a.model.Net", "init_args": {}}, "trainer": {"callbacks": []}}


def test_closure_follows_imports_packages_strings_and_lazy_exports(tree):
    found = set(run_sources(CONFIG, tree))
    assert {DRIVER, "zoo.core", "zoo.lazy_helper", "zoo.cli", "zoo"} <= found  # driver, function-level relative
    assert {"zoo_tasks.a.model", "zoo_tasks.a.layers", "zoo_tasks.a.extra", "zoo_tasks.a", "zoo_tasks"} <= found
    assert {"zoo.lazy", "zoo.lazy.deep.one"} <= found  # a lazy package brings every module below it
    assert not found & {"zoo.render", "zoo_tasks.a.unused", "zoo_tasks.b", "zoo_tasks.b.model"}


def test_hash_changes_with_run_code_only(tree):
    first = source_hash(CONFIG, tree)
    assert len(first) == 64 and source_hash(CONFIG, tree) == first
    (tree["zoo"] / "render.py").write_text("PAGE = 'edited'\n")  # a page renderer
    (tree["zoo_tasks"] / "b" / "model.py").write_text("B = 2\n")  # another task
    (tree["zoo_tasks"] / "a" / "new_file.py").write_text("")  # a file nothing imports
    assert source_hash(CONFIG, tree) == first
    (tree["zoo_tasks"] / "a" / "layers.py").write_text("class Block: pass\n")
    assert source_hash(CONFIG, tree) != first
    second = source_hash(CONFIG, tree)
    (tree["zoo"] / "lazy_helper.py").write_text("X = 2\n")
    assert source_hash(CONFIG, tree) != second


def test_missing_modules_and_third_party_names_are_skipped(tree):
    found = closure(["zoo_tasks.a.model.Net", "torch.nn", "zoo.does_not_exist"], tree)
    assert "zoo_tasks.a.model" in found and "zoo" in found and not any(n.startswith("torch") for n in found)


def test_the_installed_c2gmoe_run_closure_holds_its_own_code_not_other_tasks():
    config = {
        "model": {"class_path": "zoo_tasks.graphs.module.GraphClassifier"},
        "data": {"class_path": "zoo_tasks.graphs.data.PlanetoidDataModule"},
    }
    found = set(run_sources(config, installed_roots()))
    assert {"zoo_tasks.graphs.module", "zoo_tasks.graphs.c2gmoe", "zoo.moe.layer", "zoo.cli.lightning_cli"} <= found
    assert not any(n.startswith(("zoo_tasks.timeseries", "zoo_tasks.rl", "zoo.leaderboard.render")) for n in found)
