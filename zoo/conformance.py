"""The conformance suite: what every task plugin must do, checked the same way for every one of them.

For a task (a ``zoo.tasks`` plugin, built-in or third-party) it checks that

- its package holds its configs (``config_dir``) and the checksums of the datasets it reads (:func:`package_problems`);
- every benchmark row's config resolves through the ``zoo fit`` parser (:func:`row_problems`; nothing is built);
- each tiny model it declares (``TaskSpec.conformance``, a :class:`zoo.registry.ConformanceCase`) trains for two steps
  through the real module, datamodule and ``zoo fit``'s trainer callbacks, each step returning
  ``{"loss": finite scalar, "routing": {layer: zoo.moe.Routing}}`` with consistent shapes, summarised by the routing
  statistics callback, with a gradient reaching every gate (:mod:`zoo.conformance_run`);
- a checkpoint of it loads into a fresh module, which gives the same evaluation outputs on the same batches
  (:mod:`zoo.conformance_run`);
- every router of ``zoo.moe.ROUTERS`` either trains two steps or is refused with a ConfigError naming the routers
  that apply, exactly as the case declares (:mod:`zoo.conformance_run`).

Run it on a task with one command (it needs pytest, ``pip install 'moe-zoo[test]'``)::

    python -m zoo.conformance mytask          # several names, or none for every installed task
    python -m zoo.conformance mytask -- -x -k round_trip   # after "--": pytest's own options

The tests live in :mod:`zoo.conformance_tests`; the repository runs them over every discovered task in
``tests/foundation/test_conformance.py``. A case whose datasets are not on this machine, or whose task needs a
package that is not installed, is skipped with a one-line reason.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from zoo.errors import ConfigError
from zoo.registry import ConformanceCase, TaskSpec, discover

TASKS_ENV = "ZOO_CONFORMANCE_TASKS"  # comma-separated task names the suite runs on; unset: every discovered task


# -- which tasks -------------------------------------------------------------------------------------------------------
def selected_tasks() -> dict[str, TaskSpec | str]:
    """Task name -> its spec, or the error that stopped it loading; every discovered task, or those ``$TASKS_ENV``
    names (an unknown name maps to an error)."""
    loads = {load.name: (load.spec if load.spec is not None else f"{load.target}: {load.error}") for load in discover()}
    wanted = [name for name in os.environ.get(TASKS_ENV, "").split(",") if name]
    if not wanted:
        return loads
    known = ", ".join(sorted(loads)) or "(none installed)"
    return {name: loads.get(name, f"no task {name!r} is installed; installed tasks: {known}") for name in wanted}


def registry_routers() -> list[str]:
    """The names in ``zoo.moe.ROUTERS`` that load (a router plugin that fails to import is left out)."""
    from zoo.moe import ROUTERS

    return sorted(getattr(ROUTERS, "usable", lambda: ROUTERS)())


def builtin_routers() -> set[str]:
    """The routers ``zoo.moe`` ships: a case's ``refuses`` is exact for these (see :func:`check_router`)."""
    import zoo.moe.routers as routers

    return set(getattr(routers, "BUILTIN_ROUTERS", routers.ROUTERS))


def case_routers(case: ConformanceCase) -> list[str]:
    """Every router the suite tries on ``case``: the registry's and the case's own."""
    return sorted(set(registry_routers()) | set(case.routers))


# -- the package and its rows ------------------------------------------------------------------------------------------
def package_problems(spec: TaskSpec) -> list[str]:
    """What a task's package fails to bring: ``config_dir`` naming a package folder (not a relative path), the default
    config, every benchmark row's and conformance case's config in it, and checksums for every dataset it reads."""
    from zoo.data.catalog import get_dataset_spec

    if not Path(spec.config_dir).is_absolute() and ":" not in spec.config_dir:
        return [f"config_dir {spec.config_dir!r} must name a package folder ('package:folder') or an absolute path"]
    try:
        spec.config_path()
    except ConfigError as exc:
        return [str(exc)]
    problems = []
    configs = [("default_config", spec.default_config)] if spec.default_config else []
    configs += [(f"row {row.method}/{row.dataset}", row.config) for row in spec.benchmark]
    configs += [(f"conformance case {case.name}", case.config) for case in spec.conformance]
    for config, what in {c: w for w, c in reversed(configs)}.items():  # each file once, named by its first user
        if not spec.config_path(config).is_file():
            problems.append(f"{what}: config {config} is not in {spec.config_path()}")
    for dataset in spec.datasets:
        try:
            if not get_dataset_spec(dataset).checksums:
                problems.append(f"dataset {dataset!r}: no checksums")
        except ConfigError as exc:
            problems.append(f"dataset {dataset!r}: {exc}")
    known = set(registry_routers())
    for case in spec.conformance:
        unknown = sorted(set(case.refuses) - known)
        if unknown:
            problems.append(f"conformance case {case.name}: refuses {unknown}, which zoo.moe.ROUTERS does not hold")
    return problems


def fit_parser(config: Path):
    """The ``zoo fit`` parser (built from ``config``), which resolves configs without building anything."""
    from zoo.cli.lightning_cli import ZooCLI

    class ParseOnly(ZooCLI):
        def _set_seed(self) -> None:
            pass

        def instantiate_classes(self) -> None:
            pass

    return ParseOnly(args=["--config", str(config)], run=False).parser


def row_problems(spec: TaskSpec, parser=None) -> list[str]:
    """Benchmark rows whose config plus overrides the ``zoo fit`` parser (``parser``, else one built here) refuses;
    each distinct (config, overrides) is parsed once."""
    rows = {(row.config, row.overrides): f"{row.method}/{row.dataset}" for row in reversed(spec.benchmark)}
    if not rows:
        return []
    parser = parser or fit_parser(spec.config_path(next(iter(rows))[0]))
    problems = []
    for (config, overrides), label in rows.items():
        try:
            parsed = parser.parse_args(["--config", str(spec.config_path(config)), *overrides])
        except (ConfigError, SystemExit, ValueError) as exc:
            problems.append(
                f"row {label} ({config} {' '.join(overrides)}): {str(exc).splitlines()[0] if str(exc) else exc!r}"
            )
            continue
        if parsed.get("model") is None:
            problems.append(f"row {label} ({config}): no model")
    return problems


# -- the command -------------------------------------------------------------------------------------------------------
USAGE = "usage: python -m zoo.conformance [TASK ...] [-- PYTEST OPTIONS]  (no TASK: every installed task)"


def main(argv: list[str] | None = None) -> int:
    """``python -m zoo.conformance [TASK ...] [-- PYTEST OPTIONS]``: run the suite (pytest) on the named tasks."""
    argv = list(sys.argv[1:] if argv is None else argv)
    split = argv.index("--") if "--" in argv else len(argv)
    tasks, options = argv[:split], argv[split + 1 :]
    if {"-h", "--help"} & set(tasks):
        print(f"{USAGE}\n\n{__doc__}")
        return 0
    flags = [t for t in tasks if t.startswith("-")]
    if flags:
        print(f"zoo.conformance: unknown option {flags[0]} (pytest's options go after '--')\n{USAGE}", file=sys.stderr)
        return 2
    try:
        import pytest
    except ImportError:
        print("zoo.conformance needs pytest: pip install 'moe-zoo[test]'", file=sys.stderr)
        return 2
    os.environ[TASKS_ENV] = ",".join(tasks)
    return int(pytest.main(["--pyargs", "zoo.conformance_tests", "-p", "no:cacheprovider", "-q", "-rs", *options]))


if __name__ == "__main__":
    sys.exit(main())
