"""``zoo list``: registered tasks (and plugins that failed to load), their datasets, configs, ``zoo bench``
programs, and the routers."""

from __future__ import annotations

import sys

from zoo.errors import ZooError
from zoo.registry import TaskSpec, discover, load_object


def _routers() -> str:
    try:
        from zoo.moe import ROUTERS
    except ImportError as exc:
        return f"(zoo.moe unavailable: {exc})"
    return ", ".join(sorted(ROUTERS))


def _dataset(name: str) -> str:
    """The name, flagged when no installed catalog registers it (``zoo.data.resolve`` would refuse it)."""
    from zoo.data.catalog import get_dataset_spec
    from zoo.errors import ConfigError

    try:
        get_dataset_spec(name)
    except ConfigError:
        return f"{name} [NOT REGISTERED]"
    return name


def _catalog(target: str) -> str:
    """The dataset names a catalog registers, or why it does not load."""
    try:
        return ", ".join(spec.name for spec in load_object(target))
    except Exception as exc:  # noqa: BLE001 - a broken catalog is reported, never hides the other tasks
        return f"FAILED TO LOAD: {type(exc).__name__}: {exc}"


def _configs(spec: TaskSpec) -> str:
    try:
        folder = spec.config_path()
    except ZooError as exc:
        return f"[NOT FOUND: {exc}]"
    if not folder.is_dir():
        return f"{folder} [NOT FOUND]"
    configs = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*.yaml"))
    return f"{folder} ({len(configs)}: {', '.join(configs[:8])}{' ...' if len(configs) > 8 else ''})"


def list_tasks(argv: list[str]) -> int:
    if argv and argv[0] in ("-h", "--help"):
        print("usage: zoo list [--no-routers]\n\nRegistered tasks, their datasets and configs, and the routers.")
        return 0
    for load in discover():
        if load.spec is None:
            print(f"{load.name}  [FAILED TO LOAD: {load.target}]\n    error: {load.error}")
            continue
        spec = load.spec
        print(f"{spec.name}  - {spec.description}")
        print(f"    model:    {spec.model}")
        for name, path in spec.models.items():
            print(f"    model {name}: {path}")
        for name, path in spec.datamodules.items():
            print(f"    data {name}: {path}")
        if spec.datasets:
            print(f"    datasets: {', '.join(_dataset(name) for name in spec.datasets)}")
        if spec.catalog:
            print(f"    catalog:  {spec.catalog} ({_catalog(spec.catalog)})")
        print(f"    configs:  {_configs(spec)}")
        print(f"    benchmark rows: {len(spec.benchmark)}")
        for name, target in spec.benchmarks.items():
            print(f"    bench {name}: {target}")
    if "--no-routers" not in argv:
        print(f"routers: {_routers()}")
    sys.stdout.flush()
    return 0
