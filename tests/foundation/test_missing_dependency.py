"""A task whose third-party package is not installed says so in one line, naming the package and the extra that
installs it (read from the installed distribution's metadata), instead of "cannot import ...; did you mean" the
same class. The missing package is simulated: ``sys.modules[name] = None`` makes every import of it fail."""

from __future__ import annotations

import importlib
import sys

import pytest

from zoo.cli.main import main
from zoo.registry import missing_dependency


def _without(monkeypatch, package: str, *importers: str) -> None:
    """Make ``package`` uninstalled for this test, and forget the modules that imported it already. A module the test
    imports again is also bound as its package's attribute: that is put back with ``sys.modules``, else later tests
    would patch the attribute's module (``monkeypatch.setattr("zoo.tuning.study.f", ...)``) while the code imports
    ``sys.modules``' one."""
    for name in list(sys.modules):
        if name.partition(".")[0] == package or name.startswith(importers):
            parent, _, child = name.rpartition(".")
            if sys.modules.get(parent) is not None and hasattr(sys.modules[parent], child):
                monkeypatch.setattr(sys.modules[parent], child, getattr(sys.modules[parent], child))
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, package, None)


def _run(argv, monkeypatch, capsys) -> tuple[int, list[str]]:
    monkeypatch.setattr(sys, "argv", ["zoo"])  # LightningCLI commands rewrite it
    code = main(argv)
    return code, capsys.readouterr().err.strip().splitlines()


def test_fit_of_a_task_names_its_missing_package_and_extra(monkeypatch, capsys):
    _without(monkeypatch, "torch_geometric", "zoo_tasks.graphs.")
    code, err = _run(["fit", "--task", "c2gmoe", "--trainer.max_epochs", "1"], monkeypatch, capsys)
    assert code == 2
    assert err == [
        "zoo: error: zoo_tasks.graphs needs torch_geometric, which is not installed: pip install 'moe-zoo[graphs]'"
    ]


def test_a_missing_package_raised_during_a_command_is_one_line(monkeypatch, capsys, tmp_path):
    """`zoo tune` imports Optuna (the `tune` extra) only when a study starts: the error reaches the CLI raw."""
    _without(monkeypatch, "optuna", "zoo.tuning.study")
    argv = ["tune", "seer", "--row", "seer/ETTh1/96", "--trials", "1", "--runs", str(tmp_path)]
    code, err = _run(argv, monkeypatch, capsys)
    assert code == 2
    assert err == ["zoo: error: zoo.tuning needs optuna, which is not installed: pip install 'moe-zoo[tune]'"]


def _fancy_plugin(site) -> None:
    """A third-party plugin whose spec imports torch_geometric, which its own `graphs` extra declares."""
    (site / "fancy_task").mkdir()
    (site / "fancy_task" / "__init__.py").write_text("")
    (site / "fancy_task" / "spec.py").write_text("import torch_geometric\n")
    info = site / "fancy_task-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: fancy-task\nVersion: 0.1\nRequires-Dist: moe-zoo\n"
        'Provides-Extra: graphs\nRequires-Dist: torch-geometric>=2.5; extra == "graphs"\n'
    )
    (info / "top_level.txt").write_text("fancy_task\n")
    (info / "entry_points.txt").write_text("[zoo.tasks]\nfancy = fancy_task.spec:SPEC\n")


def test_zoo_list_names_a_plugins_missing_package_and_the_plugins_own_extra(monkeypatch, capsys, tmp_path):
    """The extra comes from the plugin's installed metadata: the plugin's, not moe-zoo's."""
    _fancy_plugin(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    _without(monkeypatch, "torch_geometric", "fancy_task")
    assert main(["list", "--no-routers"]) == 0
    out = capsys.readouterr().out
    assert "fancy  [FAILED TO LOAD: fancy_task.spec:SPEC]" in out
    assert "fancy_task needs torch_geometric, which is not installed: pip install 'fancy-task[graphs]'" in out


def test_a_missing_module_of_an_installed_package_is_not_called_a_missing_dependency():
    """`zoo.no_such_module` is a bug (a typo, a removed file), not something an extra installs: it keeps its
    traceback."""
    with pytest.raises(ModuleNotFoundError) as caught:
        importlib.import_module("zoo.no_such_module")
    assert missing_dependency(caught.value) is None
