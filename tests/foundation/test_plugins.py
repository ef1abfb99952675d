"""A third-party task package, installed with pip, is listed by `zoo list`, trained by `zoo fit`, and a broken
plugin is reported by name without hiding the others. The toy plugin brings its own configs (package data),
dataset (with its checksums) and `zoo bench` program: adding it touches no file of `zoo`."""

import ast
import re
import sys
from pathlib import Path

import pytest
from zoo_testing import REPO, run_zoo

import zoo.data.catalog as catalog
import zoo.registry as registry
from zoo.conformance import package_problems
from zoo.data.catalog import DatasetSpec, get_dataset_spec
from zoo.errors import ConfigError
from zoo.registry import BenchmarkRow, PluginLoad, TaskSpec, discover, package_folder, task_package

POINTS = "x,y\n0.0,1.0\n1.0,0.0\n2.0,2.0\n"  # its sha256 is in the toy plugin's checksums/toy-points.sha256


def test_zoo_list_shows_installed_plugin_and_reports_broken_one(zoo_env, tmp_path):
    out = run_zoo(["list"], zoo_env, tmp_path)
    assert out.returncode == 0, out.stderr
    assert "toy  - 8x8 digits classification" in out.stdout
    assert "toy_broken  [FAILED TO LOAD: zoo_toy.does_not_exist:SPEC]" in out.stdout
    assert "ModuleNotFoundError" in out.stdout
    assert "routers: " in out.stdout and "topk" in out.stdout


@pytest.mark.slow(reason="zoo fit of the plugin task in a zoo process")
def test_zoo_fit_trains_plugin_task_and_saves_run_metadata(zoo_env, tmp_path):
    out = run_zoo(
        ["fit", "--task", "toy", "--trainer.max_epochs", "2", "--trainer.default_root_dir", "run"], zoo_env, tmp_path
    )
    assert out.returncode == 0, out.stderr[-3000:]
    run = tmp_path / "run"
    assert (run / "checkpoints" / "last.ckpt").is_file()
    logs = run / "lightning_logs" / "version_0"
    assert (logs / "config.yaml").is_file()
    meta = (logs / "run_fit.json").read_text()
    for key in ('"seed": 0', '"versions"', '"torch"', '"commit"', '"wall_time_s"', '"val/acc"'):
        assert key in meta
    assert any(p.name.startswith("events.out.tfevents") for p in logs.iterdir()), "TensorBoard log missing"


def test_plugin_brings_its_configs_dataset_and_bench_through_its_own_package(zoo_env, plugin_site, tmp_path):
    out = run_zoo(["list", "--no-routers"], zoo_env, tmp_path)
    assert out.returncode == 0, out.stderr
    toy = out.stdout.split("toy  - ")[1].split("toy_broken")[0]
    assert f"configs:  {plugin_site / 'zoo_toy' / 'configs'} (1: digits.yaml)" in toy  # installed package data
    assert "datasets: toy-points\n" in toy  # registered by the plugin's catalog (else "[NOT REGISTERED]")
    assert "catalog:  zoo_toy.datasets:DATASETS (toy-points)" in toy
    assert "bench toy: zoo_toy.bench:main" in toy


def _toy_bench(env, cwd, data_dir):
    return run_zoo(["bench", "toy", "--data-dir", str(data_dir)], env, cwd)


def test_plugin_dataset_resolves_with_the_plugins_checksums(zoo_env, tmp_path):
    data = tmp_path / "toy-points"
    data.mkdir()
    (data / "points.csv").write_text(POINTS)
    out = _toy_bench(zoo_env, tmp_path, data)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "toy bench: 3 points, mean (1.00, 1.00)" in out.stdout
    (data / "points.csv").write_text(POINTS.replace("2.0,2.0", "2.0,2.5"))
    out = _toy_bench(zoo_env, tmp_path, data)
    assert out.returncode != 0 and "expected 48c18854" in out.stderr and "Traceback" not in out.stderr


TASKS = {load.name: load for load in discover()}


def package_check(spec: TaskSpec) -> list[str]:
    """What a task fails to find in its own package: ``config_dir`` must name a package folder (a checkout path
    breaks in a wheel), and every config and dataset checksum must be there (``zoo.conformance.package_problems``)."""
    if Path(spec.config_dir).is_absolute() or ":" not in spec.config_dir:
        return [f"config_dir {spec.config_dir!r} must name a package ('package:folder')"]
    return package_problems(spec)


@pytest.mark.parametrize("name", sorted(TASKS))
def test_every_builtin_task_finds_its_configs_and_datasets_in_its_package(name):
    spec = TASKS[name].spec
    assert spec is not None, TASKS[name].error
    assert not package_check(spec), package_check(spec)


def test_the_package_check_reports_a_checkout_path_a_missing_config_and_an_unregistered_dataset(tmp_path):
    base = {"description": "", "model": "m:M", "datamodules": {}}
    assert package_check(TaskSpec("a", config_dir="configs/a", **base)) == [
        "config_dir 'configs/a' must name a package ('package:folder')"
    ]
    assert package_check(TaskSpec("a", config_dir=str(tmp_path), **base))  # absolute: a plugin may, a built-in not
    row = BenchmarkRow(method="moe", dataset="d", config="missing.yaml")
    problems = package_check(TaskSpec("a", config_dir="zoo:cli", benchmark=(row,), datasets=("NoSuchSet",), **base))
    assert problems[0].startswith("row moe/d: config missing.yaml is not in ")
    assert problems[1].startswith("dataset 'NoSuchSet': ") and "NoSuchSet" in problems[1][20:]


def test_builtin_datasets_verify_against_the_mirror(data_mirror, monkeypatch, tmp_path):
    from zoo.data import verify

    monkeypatch.setenv("ZOO_CACHE_DIR", str(tmp_path))
    for load in discover():
        for dataset in load.spec.datasets if load.spec else ():
            verify(data_mirror / dataset, dataset)  # every file of every dataset a task reads


def code_names(path: Path) -> list[str]:
    """The names and strings a module's code uses: identifiers, attributes, imports and string constants, without
    docstrings and comments (prose may name a task as an example; code may not depend on one)."""
    tree = ast.parse(path.read_text())
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            found.append(node.value)
        elif isinstance(node, ast.Name):
            found.append(node.id)
        elif isinstance(node, ast.Attribute):
            found.append(node.attr)
        elif isinstance(node, ast.alias):
            found += [node.name, node.asname or ""]
        elif isinstance(node, ast.ImportFrom):
            found.append(node.module or "")
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.append(node.name)
    return found


def task_mentions(root: Path, names: set[str]) -> list[str]:
    """``file: name`` for each module under ``root`` whose code uses one of ``names`` as a word of its own
    (``zoo_tasks`` in ``zoo_tasks.mil``, but not ``mammoth`` in the distribution name ``mammoth-moe``)."""
    words = re.compile(rf"(?<![\w-])({'|'.join(map(re.escape, sorted(names)))})(?![\w-])")
    return [
        f"{path.relative_to(root)}: {word}"
        for path in sorted(root.rglob("*.py"))
        for word in sorted({m for text in code_names(path) for m in words.findall(text)})
    ]


def task_names() -> set[str]:
    """Every discovered task's name and the top-level package of its entry point (``zoo_tasks``)."""
    return {load.name for load in TASKS.values()} | {load.target.partition(".")[0] for load in TASKS.values()}


def test_core_names_no_task():
    """Adding a task touches no file of zoo/: no core module's code names a discovered task or its package."""
    names = task_names()
    assert {"zoo_tasks", "seer", "mammoth", "dronedino"} <= names  # discovery found the built-ins
    hits = task_mentions(REPO / "zoo", names)
    assert not hits, hits


def test_the_core_check_reports_code_that_names_a_task_and_not_prose(tmp_path):
    (tmp_path / "importer.py").write_text("from zoo_tasks.mil import spec\n")
    (tmp_path / "lookup.py").write_text('SPEC = get_task("seer")\n')
    (tmp_path / "prose.py").write_text('"""As `zoo reproduce seer` shows."""\n# seer, zoo_tasks\nX = "mammoth-moe"\n')
    assert task_mentions(tmp_path, {"seer", "mammoth", "zoo_tasks"}) == ["importer.py: zoo_tasks", "lookup.py: seer"]


def _fake_plugins(monkeypatch, *specs: TaskSpec) -> None:
    loads = [PluginLoad(spec.name, f"fake:{spec.name}", spec, None) for spec in specs]
    monkeypatch.setattr(registry, "discover", lambda: loads)
    catalog.plugin_catalog.cache_clear()


@pytest.fixture()
def restore_catalog():
    yield
    catalog.plugin_catalog.cache_clear()


def test_two_plugins_registering_one_dataset_differently_is_an_error(monkeypatch, tmp_path, restore_catalog):
    monkeypatch.setitem(sys.modules, "fake_catalogs", type(sys)("fake_catalogs"))
    sys.modules["fake_catalogs"].A = (DatasetSpec("shared", "https://a", extra_checksums={"f": "0" * 64}),)
    sys.modules["fake_catalogs"].B = (DatasetSpec("shared", "https://b", extra_checksums={"f": "1" * 64}),)
    sys.modules["fake_catalogs"].C = (DatasetSpec("shared", "https://a", extra_checksums={"f": "0" * 64}),)
    base = {"description": "", "model": "m:M", "datamodules": {}, "config_dir": str(tmp_path)}
    _fake_plugins(
        monkeypatch, TaskSpec("a", catalog="fake_catalogs:A", **base), TaskSpec("c", catalog="fake_catalogs:C", **base)
    )
    assert get_dataset_spec("shared").url == "https://a"  # the same spec from two tasks of one package is fine
    _fake_plugins(
        monkeypatch, TaskSpec("a", catalog="fake_catalogs:A", **base), TaskSpec("b", catalog="fake_catalogs:B", **base)
    )
    with pytest.raises(ConfigError, match="'shared' is registered differently by tasks 'a' and 'b'"):
        get_dataset_spec("shared")
    _fake_plugins(monkeypatch, TaskSpec("x", catalog="fake_catalogs:MISSING", **base))
    with pytest.raises(ConfigError, match=r"unknown dataset 'shared'.*catalog of task 'x'.*has no attribute 'MISSING'"):
        get_dataset_spec("shared")


def test_two_tasks_claiming_one_bench_name_is_an_error(monkeypatch, tmp_path, restore_catalog):
    base = {"description": "", "model": "m:M", "datamodules": {}, "config_dir": str(tmp_path)}
    _fake_plugins(monkeypatch, TaskSpec("a", benchmarks={"speed": "a.bench:main"}, **base))
    assert registry.benchmarks() == {"speed": "a.bench:main"}
    _fake_plugins(
        monkeypatch,
        TaskSpec("a", benchmarks={"speed": "a.bench:main"}, **base),
        TaskSpec("b", benchmarks={"speed": "b.bench:main"}, **base),
    )
    with pytest.raises(ConfigError, match="benchmark 'speed' is declared by tasks 'a'"):
        registry.benchmarks()


def test_dataset_without_checksums_is_refused():
    with pytest.raises(ConfigError, match="'bare' lists no files"):
        _ = DatasetSpec("bare", "https://x").checksums
    with pytest.raises(ConfigError, match="checksum file .*nothing.sha256 is missing"):
        _ = DatasetSpec("nothing", "https://x", package="zoo").checksums


def test_config_dir_must_name_a_package_folder_or_an_absolute_path(tmp_path):
    assert package_folder(str(tmp_path)) == tmp_path
    assert package_folder("zoo:cli") == REPO / "zoo" / "cli"
    with pytest.raises(ConfigError, match="'configs/x' must be 'package:folder'"):
        package_folder("configs/x", "config_dir")
    with pytest.raises(ConfigError, match="package 'no_such_pkg' is not importable"):
        package_folder("no_such_pkg:configs", "config_dir")


def test_task_package_is_the_entry_points_package():
    assert task_package("zoo_tasks.mil.module") == "zoo_tasks.mil"  # the entry point is zoo_tasks.mil.spec:MAMMOTH
    assert task_package("zoo_tasks.mil") == "zoo_tasks.mil"
    assert task_package("zoo_tasks.milk.module") == "zoo_tasks"  # not a prefix match on names
    assert task_package("elsewhere.model") == "elsewhere"
