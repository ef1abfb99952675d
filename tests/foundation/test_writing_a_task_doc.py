"""docs/writing-a-task.md's complete plugin works as written: its fenced blocks (each naming its file in its first
line) are copied out, installed with pip as a third party would, listed by `zoo list`, trained by `zoo fit` with
the doc's own YAML config and checked by the doc's one command, `python -m zoo.conformance mytask`."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from zoo_testing import REPO, hang_guard

from zoo.cli.main import main
from zoo.conformance import registry_routers

DOC = REPO / "docs" / "writing-a-task.md"
BLOCK = re.compile(r"^```(?:toml|python|yaml)\n# file: (\S+)\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def doc_files() -> dict[str, str]:
    """File path -> text of every block of the doc that names its file."""
    return {path: text for path, text in BLOCK.findall(DOC.read_text())}


@pytest.fixture(scope="module")
def doc_plugin(tmp_path_factory) -> Path:
    """The doc's plugin, pip-installed into a folder of its own; that folder is returned."""
    source = tmp_path_factory.mktemp("doc_src") / "my_zoo_task"
    for path, text in doc_files().items():
        (source / path).parent.mkdir(parents=True, exist_ok=True)
        (source / path).write_text(text)
    site = tmp_path_factory.mktemp("doc_site")
    pip = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation"]
    subprocess.run(
        [*pip, "--disable-pip-version-check", "--target", str(site), str(source)],
        check=True,
        capture_output=True,
        cwd=source.parent,
    )
    return site


@pytest.fixture()
def installed(doc_plugin, monkeypatch):
    """The doc's plugin importable (and its entry point found) in this process, for this test only."""
    monkeypatch.syspath_prepend(str(doc_plugin))
    monkeypatch.setattr(sys, "argv", ["zoo"])  # LightningCLI commands rewrite it
    yield doc_plugin
    for name in [m for m in sys.modules if m == "my_package" or m.startswith("my_package.")]:
        del sys.modules[name]


def test_the_doc_has_every_file_of_a_plugin():
    files = doc_files()
    for needed in ("pyproject.toml", "my_package/spec.py", "my_package/model.py", "my_package/data.py"):
        assert needed in files, sorted(files)
    assert any(path.endswith(".yaml") for path in files), sorted(files)


def test_zoo_list_shows_the_doc_task(installed, capsys):
    assert main(["list", "--no-routers"]) == 0
    out = capsys.readouterr().out
    assert "mytask  - two Gaussian blobs" in out
    assert f"configs:  {installed / 'my_package' / 'configs'} (1: default.yaml)" in out


def test_zoo_fit_trains_the_doc_task_from_its_yaml(installed, tmp_path):
    config = installed / "my_package" / "configs" / "default.yaml"
    root = tmp_path / "run"
    args = ["fit", "--config", str(config), "--trainer.max_epochs", "1", "--trainer.default_root_dir", str(root)]
    assert main(args) == 0
    assert (root / "checkpoints" / "last.ckpt").is_file()
    assert (root / "lightning_logs" / "version_0" / "config.yaml").is_file()


def test_the_specs_module_colon_class_form_in_yaml_says_how_to_write_it(installed, tmp_path, capsys):
    """A config copying the spec's "module:Class" form is refused in one line that gives the dotted path (it said
    "model: expected NoneType")."""
    text = (installed / "my_package" / "configs" / "default.yaml").read_text()
    config = tmp_path / "colon.yaml"
    config.write_text(text.replace("my_package.model.BlobClassifier", "my_package.model:BlobClassifier"))
    assert main(["fit", "--config", str(config), "--trainer.default_root_dir", str(tmp_path / "run")]) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("zoo: error:")]
    assert errors == [
        "zoo: error: model.class_path: 'my_package.model:BlobClassifier' is not a dotted class path; "
        "write 'my_package.model.BlobClassifier' (the 'module:Class' form is for TaskSpec)"
    ]


def test_the_doc_has_a_check_your_plugin_section_with_its_one_command():
    section = DOC.read_text().split("## 6. Check your plugin")[1]
    assert "python -m zoo.conformance mytask\n" in section


@pytest.mark.slow(reason="the conformance suite (a pytest run) over every router in a subprocess")
def test_the_conformance_suite_passes_on_the_doc_task(doc_plugin, tmp_path):
    """The doc's one command, run as a plugin author runs it: the doc's tiny case trains, round-trips its checkpoint
    and takes every router of the registry."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(doc_plugin), str(REPO), os.environ.get("PYTHONPATH", "")])}
    env.update(ZOO_CACHE_DIR=str(tmp_path / "cache"), OMP_NUM_THREADS="1")
    out = subprocess.run(
        [sys.executable, "-m", "zoo.conformance", "mytask"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=hang_guard(300),
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    summary = out.stdout.strip().splitlines()[-1]
    passed = int(re.search(r"(\d+) passed", summary).group(1))
    # the task loads, declares its case, its package, its row; the case's two steps, round trip and every router
    assert passed == 6 + len(registry_routers()) and "skipped" not in summary and "failed" not in summary, summary
