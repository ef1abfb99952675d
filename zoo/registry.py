"""Task plugins discovered through the ``zoo.tasks`` entry-point group.

A plugin is any installed distribution that declares, in its ``pyproject.toml``::

    [project.entry-points."zoo.tasks"]
    mytask = "my_package.spec:SPEC"

where ``SPEC`` is a :class:`TaskSpec`. Built-in tasks register exactly this way (see this project's
``pyproject.toml``), following nerfstudio's ``nerfstudio.method_configs`` pattern. Specs name classes by dotted
path so that ``zoo list`` stays fast: nothing heavy is imported until a task is trained. A plugin brings
everything else it needs the same way: its configs as package data (``config_dir``), its datasets with their
checksums (``catalog``) and its ``zoo bench`` programs (``benchmarks``); the core names no task.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.resources
import importlib.util
import re
import sys
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path

from zoo.errors import ConfigError

ENTRY_POINT_GROUP = "zoo.tasks"
# import name -> distribution name, where the two differ by more than "-" / "_" / case
DISTRIBUTION_OF = {"sklearn": "scikit-learn", "yaml": "PyYAML", "PIL": "pillow"}


@dataclass(frozen=True)
class BenchmarkRow:
    """One cell group of a task's leaderboard table: a config run for each seed (or fold) and tested.

    Attributes:
        method: column of the table, e.g. ``"moe"``, ``"dense"``, ``"gcn"``.
        dataset: row of the table, e.g. ``"ETTh1/96"``.
        config: YAML config, relative to the task's ``config_dir``.
        overrides: extra ``--key value`` CLI arguments applied after the config.
        seeds: one run (one JSON record) per seed.
        folds: for cross-validation, one run per (seed, fold); ``--data.init_args.fold`` is set to each.
        published: the published reference numbers for this cell, metric name -> value.
        published_source: where ``published`` comes from (paper, table).
        quick_overrides: overrides added by ``zoo reproduce --quick`` (a smoke run, flagged as reduced).
        reduced: True when this row deviates from the paper's settings (fewer epochs, smaller model);
            ``note`` says how. Reduced rows are flagged in the table.
        note: free text shown beside the row.
        tune_trials: when > 0, ``zoo reproduce`` first runs ``zoo tune`` on the row (that many finished trials,
            validation only, the method's ``TaskSpec.search_spaces``) and runs every seed with the chosen values;
            the record's ``extra["tuning"]`` says how it was tuned.
    """

    method: str
    dataset: str
    config: str
    overrides: tuple[str, ...] = ()
    seeds: tuple[int, ...] = (0,)
    folds: int = 0
    published: dict[str, float] = field(default_factory=dict)
    published_source: str = ""
    quick_overrides: tuple[str, ...] = ()
    reduced: bool = False
    note: str = ""
    tune_trials: int = 0

    def runs(self) -> list[tuple[int, int | None]]:
        """The (seed, fold) pairs this row expands to; fold is None without cross-validation."""
        folds: list[int | None] = list(range(self.folds)) if self.folds else [None]
        return [(seed, fold) for seed in self.seeds for fold in folds]


@dataclass(frozen=True)
class MatrixRow:
    """A task's representative row of the router x task table (``zoo reproduce matrix``, issue 26).

    Attributes:
        row: ``"method/dataset"`` of the benchmark row whose router is varied (an MoE method).
        dense: ``"method/dataset"`` of its dense twin, run in the same table row.
        trials: finished ``zoo tune`` trials per cell (every router and the dense twin get the same budget).
        seeds: benchmark seeds each tuned cell is run on (tuning uses ``TUNE_SEED``, none of these).
        overrides: settings that make the row cheap enough for the matrix (stated on the page).
    """

    row: str
    dense: str
    trials: int = 8
    seeds: tuple[int, ...] = (0, 1, 2)
    overrides: tuple[str, ...] = ()


@dataclass(frozen=True)
class ConformanceCase:
    """A tiny model of a task that the conformance suite (``python -m zoo.conformance TASK``) trains: a config of the
    task, shrunk by command-line overrides, on its own datamodule (reading the real data where the case names a
    dataset; the suite skips, saying why, where this machine lacks it).

    Attributes:
        name: the case's name in test ids, e.g. ``"node-c2gmoe"``.
        config: YAML config, relative to the task's ``config_dir`` (usually one of its benchmark configs).
        overrides: ``--key=value`` arguments that make it tiny (model widths, data sizes, batch size); ``{files}``
            stands for a temporary folder of the case's own (data it generates). The suite adds the trainer's (two
            training steps, one validation batch, no logger).
        datasets: catalogue datasets the case reads; absent ones skip the case with a one-line reason.
        packages: modules the case needs that a task's import alone does not prove installed (a model that checks
            for them when it is built, e.g. ``"mmcv.ops"``); one that does not import skips the case, saying so.
        refuses: the routers of ``zoo.moe.ROUTERS`` this model refuses with a ConfigError (naming the routers that
            apply) when it is built; every other router must train. For the routers ``zoo.moe`` ships, a refusal
            not declared here, or a declared one that trains, fails the suite (a router plugin installed later may
            be refused undeclared: the suite reports it as a skip).
        routers: router names the model takes beyond ``zoo.moe.ROUTERS`` (a paper's own rule, e.g. MoE-GS's).
        router_parameters: fragments of the parameter names of the model's gates; a parameter's gate is its name up
            to the end of the fragment (``"actor.router"`` for ``"actor.router.gate.weight"``), and the two training
            steps must give each gate a finite, non-zero gradient.
        prepare: ``"package.module:function"`` of ``fn(folder: Path) -> list[str]``, for a model that reads files
            which other runs make (MoE-GS's frozen experts): writes tiny stand-ins into ``folder`` and returns the
            overrides naming them; "" for none.
        warmup_steps: training steps that return None before the first that trains (an RL agent's random steps
            filling its replay buffer); the suite's epochs are this much longer.
    """

    name: str
    config: str
    overrides: tuple[str, ...] = ()
    datasets: tuple[str, ...] = ()
    packages: tuple[str, ...] = ()
    refuses: tuple[str, ...] = ()
    routers: tuple[str, ...] = ()
    router_parameters: tuple[str, ...] = ("router",)
    prepare: str = ""
    warmup_steps: int = 0


@dataclass(frozen=True)
class TaskSpec:
    """What a plugin's ``zoo.tasks`` entry point yields.

    Attributes:
        name: the task's name on the command line (``zoo reproduce NAME``).
        description: one line for ``zoo list``.
        model: dotted path ``"package.module:Class"`` of the LightningModule (MoE method and its dense twin
            are usually one class selected by config, or several classes listed in ``models``).
        datamodules: dataset family name -> dotted path of its LightningDataModule.
        config_dir: folder holding the task's YAML configs, as ``"package:folder"`` -- a folder of an
            importable package's data, found with ``importlib.resources`` wherever the package is installed
            (``"my_package:configs"``) -- or as an absolute path.
        default_config: the config ``zoo fit --task NAME`` uses, relative to ``config_dir``.
        benchmark: the rows ``zoo reproduce NAME`` runs.
        metrics: the test metrics shown in the leaderboard (logged names, e.g. ``"test/mse"``); lower is
            better unless the name is listed in ``higher_is_better``.
        higher_is_better: metrics where larger is better.
        datasets: names of the datasets this task reads (shown by ``zoo list``, checked against the catalog).
        catalog: dotted path ``"package.module:ATTR"`` of a sequence of :class:`zoo.data.DatasetSpec` that
            this plugin registers (several tasks of one package may name the same catalog), or "".
        extra_tables: dotted path of ``fn(records) -> str`` returning extra markdown for the leaderboard
            page (robustness table, diagnostics), or "".
        targets: claims judged on the records and shown on the page, as data: instances of the classes in
            ``zoo.leaderboard.targets`` (``AtLeast``, ``BeatsOnAverage``, ``BeatsBestPublished``, ...).
        benchmarks: ``zoo bench NAME`` programs this task brings, NAME -> ``"package.module:function"``; the
            function takes the remaining argv (a list of str) and returns an exit code (or None).
        search_spaces: ``zoo tune`` spaces, method (a row's column) -> {config key: ``zoo.tuning.space`` Float /
            Int / Choice}; the same budget of trials is given to a method and its baselines.
        router_arg: config prefix holding the MoE model's ``router`` and ``router_kwargs`` init arguments.
        tune_metric: (validation metric, "max" | "min") for models that name no ``checkpoint_monitor``.
        matrix: this task's row of the router x task table (:class:`MatrixRow`), or None.
        dense_twins: (MoE method, its dense twin) column pairs, compared on every dataset both ran in the first of
            ``metrics`` by ``zoo.leaderboard.compare``: the page's summary and the README's task table count better /
            tie / worse (``zoo.leaderboard.twins``).
        probe_overrides: dotted path of ``fn(config)`` giving command-line overrides that the re-verification
            probe (``zoo.reverify``) adds to a record's resolved ``config``, for runs whose test cannot run on a few
            batches as configured (a continual sequence that must finish, a metric that trains networks for
            thousands of iterations): smaller sizes of the same code path, never another path. It returns a list
            (for the short fit only) or ``{"short": [...], "every": [...]}``, where "every" also reaches the
            schedule trace (stand-ins for another run's outputs). Both commits' probes take the same overrides;
            "" adds none.
        conformance: the tiny models (:class:`ConformanceCase`) that ``python -m zoo.conformance NAME`` trains for two
            steps, checks (step protocol, checkpoint round trip) and runs with every router of ``zoo.moe.ROUTERS``.
    """

    name: str
    description: str
    model: str
    datamodules: dict[str, str]
    config_dir: str
    default_config: str = ""
    benchmark: tuple[BenchmarkRow, ...] = ()
    metrics: tuple[str, ...] = ()
    higher_is_better: tuple[str, ...] = ()
    datasets: tuple[str, ...] = ()
    extra_tables: str = ""
    models: dict[str, str] = field(default_factory=dict)
    benchmarks: dict[str, str] = field(default_factory=dict)
    catalog: str = ""
    targets: tuple = ()
    search_spaces: dict = field(default_factory=dict)
    router_arg: str = "model.init_args"
    tune_metric: tuple[str, str] | None = None
    matrix: MatrixRow | None = None
    dense_twins: tuple[tuple[str, str], ...] = ()
    probe_overrides: str = ""
    conformance: tuple[ConformanceCase, ...] = ()

    def config_path(self, relative: str = "") -> Path:
        """``relative`` (a config file, or "" for the folder) inside this task's ``config_dir``."""
        return package_folder(self.config_dir, f"TaskSpec {self.name!r} config_dir") / relative


@dataclass(frozen=True)
class PluginLoad:
    """Result of loading one entry point: the spec, or the error that stopped it."""

    name: str
    target: str
    spec: TaskSpec | None
    error: str | None


def package_folder(where: str, what: str = "folder") -> Path:
    """``"package:folder"`` -> that folder inside the installed package; an absolute path is returned as is.

    Raises:
        ConfigError: ``where`` is neither, the package is not importable, or it is not a folder on disk
            (a zipped install).
    """
    if Path(where).is_absolute():
        return Path(where)
    package, sep, folder = where.partition(":")
    if not sep or not package:
        raise ConfigError(f"{what} {where!r} must be 'package:folder' (e.g. 'my_package:configs') or an absolute path")
    try:
        root = importlib.resources.files(package)
    except ModuleNotFoundError as exc:
        raise ConfigError(f"{what} {where!r}: package {package!r} is not importable ({exc})") from None
    path = root.joinpath(folder) if folder else root
    if not isinstance(path, Path):
        raise ConfigError(f"{what} {where!r}: package {package!r} is not a folder on disk ({type(path).__name__})")
    return path


def checkout_root() -> Path | None:
    """The moe-zoo source checkout this ``zoo`` is imported from (an editable install), or None when
    ``zoo`` is installed from a wheel. Nothing a task needs to run depends on it."""
    root = Path(__file__).resolve().parent.parent
    project = root / "pyproject.toml"
    return root if project.is_file() and 'name = "moe-zoo"' in project.read_text() else None


def repository_root() -> Path:
    """Where ``leaderboard/`` and ``runs/`` live by default: the source checkout when ``zoo`` runs from one,
    else the current directory (an installed ``zoo`` never writes into site-packages)."""
    return checkout_root() or Path.cwd()


def task_package(module: str) -> str:
    """The task package holding ``module``: the package of the ``zoo.tasks`` entry point whose spec module lies in
    it, the longest such (``a.b.model`` -> ``a.b`` for an entry point ``a.b.spec:SPEC``), else ``module``'s
    top-level package. Reads entry-point names only; imports nothing."""
    best = ""
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        package = ep.value.partition(":")[0].rpartition(".")[0]
        if package and (module == package or module.startswith(package + ".")) and len(package) > len(best):
            best = package
    return best or module.partition(".")[0]


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _missing_module(exc: BaseException | None) -> ModuleNotFoundError | None:
    """The ModuleNotFoundError behind ``exc`` (itself, a cause or a context), if any."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, ModuleNotFoundError) and exc.name:
            return exc
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return None


def _not_installed(top: str) -> bool:
    if top in sys.modules:
        return sys.modules[top] is None  # None: imports of it are blocked
    try:
        return importlib.util.find_spec(top) is None
    except (ImportError, ValueError):
        return True


def _importer(exc: BaseException) -> str:
    """The module whose import statement raised ``exc``: the innermost frame outside importlib."""
    tb, name = exc.__traceback__, ""
    while tb is not None:
        module = tb.tb_frame.f_globals.get("__name__", "")
        if not module.startswith(("importlib", "_frozen_importlib")):
            name = module
        tb = tb.tb_next
    return name


def _extras_declaring(distribution: str, needed: str) -> list[str] | None:
    """The extras of installed ``distribution`` that require ``needed`` ([] when it is a core dependency), or None
    when ``distribution`` is not installed or does not declare ``needed``; read from its metadata."""
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        meta = importlib.metadata.metadata(distribution)
        requires = importlib.metadata.requires(distribution) or []
    except importlib.metadata.PackageNotFoundError:
        return None
    extras = meta.get_all("Provides-Extra") or []
    parsed = []
    for line in requires:
        try:
            parsed.append(Requirement(line))
        except InvalidRequirement:
            continue
    # the distribution named like the import, else one whose name extends it (import `foo` from `foo-bar`)
    want = _normalize(needed)
    matching = [r for r in parsed if _normalize(r.name) == want] or [
        r for r in parsed if _normalize(r.name).startswith(want + "-")
    ]
    found: set[str] = set()
    for req in matching:
        if req.marker is None or req.marker.evaluate({"extra": ""}):
            return []
        found.update(e for e in extras if req.marker.evaluate({"extra": e}))
    return sorted(found) if found else None


def missing_dependency(exc: BaseException | None) -> str | None:
    """One line for an import that failed because a third-party package is not installed, naming the package and
    the extra of the importing distribution that installs it, e.g. ``my_tasks.graphs needs torch_geometric,
    which is not installed: pip install 'moe-zoo[graphs]'``; None when ``exc`` is no such error (a module of the
    importer's own package missing is a bug, not an install problem)."""
    err = _missing_module(exc)
    if err is None:
        return None
    top = err.name.partition(".")[0]
    importer = _importer(err)
    if not importer or importer.partition(".")[0] == top or not _not_installed(top):
        return None
    package = task_package(importer)
    if package == importer.partition(".")[0]:  # no task holds it: name the importer's own package (zoo.tuning)
        package = importer.rpartition(".")[0] or importer
    needed = DISTRIBUTION_OF.get(top, top)
    owners = importlib.metadata.packages_distributions().get(importer.partition(".")[0], [])
    for owner in dict.fromkeys(owners):
        extras = _extras_declaring(owner, needed)
        if extras is None:
            continue
        preferred = [e for e in extras if e in package.split(".")] or extras
        install = f"{owner}[{preferred[0]}]" if preferred else needed
        return f"{package} needs {top}, which is not installed: pip install '{install}'"
    return f"{package} needs {top}, which is not installed (and no extra declares it)"


def load_object(dotted: str):
    """Import ``"package.module:attr"`` (or ``"package.module.attr"``) and return the attribute."""
    module_name, _, attr = dotted.partition(":")
    if not attr:
        module_name, _, attr = dotted.rpartition(".")
    module = importlib.import_module(module_name)
    try:
        return getattr(module, attr)
    except AttributeError as exc:
        raise ConfigError(f"{module_name!r} has no attribute {attr!r}") from exc


def discover() -> list[PluginLoad]:
    """Load every ``zoo.tasks`` entry point; a plugin that fails to import is returned with its error."""
    loads = []
    for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        try:
            spec = ep.load()
            if not isinstance(spec, TaskSpec):
                raise TypeError(f"entry point must name a zoo.registry.TaskSpec, got {type(spec).__name__}")
            loads.append(PluginLoad(ep.name, ep.value, spec, None))
        except Exception as exc:  # noqa: BLE001 - a broken plugin must not hide the others
            error = missing_dependency(exc) or f"{type(exc).__name__}: {exc}"
            loads.append(PluginLoad(ep.name, ep.value, None, error))
    return loads


def benchmarks() -> dict[str, str]:
    """``zoo bench`` programs of every task that loads: NAME -> ``"package.module:function"``.

    Raises:
        ConfigError: two tasks claim the same benchmark name for different functions.
    """
    found: dict[str, tuple[str, str]] = {}
    for load in discover():
        for name, target in (load.spec.benchmarks if load.spec else {}).items():
            if name in found and found[name][1] != target:
                raise ConfigError(
                    f"benchmark {name!r} is declared by tasks {found[name][0]!r} ({found[name][1]}) and "
                    f"{load.name!r} ({target}); rename one in its TaskSpec.benchmarks"
                )
            found[name] = (load.name, target)
    return {name: target for name, (_, target) in sorted(found.items())}


def get_task(name: str) -> TaskSpec:
    """The spec of a registered task; an unknown or broken one raises ConfigError naming the choices."""
    loads = {load.name: load for load in discover()}
    if name not in loads:
        known = ", ".join(sorted(loads)) or "(none installed)"
        raise ConfigError(f"unknown task {name!r}; registered tasks: {known}")
    load = loads[name]
    if load.spec is None:
        raise ConfigError(f"task {name!r} ({load.target}) failed to load: {load.error}")
    return load.spec
