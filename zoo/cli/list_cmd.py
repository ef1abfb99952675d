"""``zoo list``: registered tasks (and plugins that failed to load), their datasets, configs, ``zoo bench``
programs, and the routers."""

from __future__ import annotations

import sys

from zoo.errors import ZooError
from zoo.registry import TaskSpec, discover, load_object


def _routers() -> list[str]:
    """A summary line, then each router with where it comes from: built-in, or the plugin distribution and version
    (and its entry point) that declares it; a plugin that cannot be used is flagged with its one-line error."""
    try:
        from zoo.moe.routers import router_sources
    except ImportError as exc:
        return [f"routers: (zoo.moe unavailable: {exc})"]
    sources = router_sources()
    plugins = sum(source.origin != "built-in" for source in sources)
    broken = sum(source.error is not None for source in sources)
    lines = [
        f"routers: {len(sources) - plugins} built-in, {plugins} from plugins"
        + (f"; {broken} cannot be used" if broken else "")
    ]
    width = max((len(source.name) for source in sources), default=0)
    for source in sources:
        where = source.origin if source.origin == "built-in" else f"{source.origin} ({source.target})"
        lines.append(f"    {source.name:<{width}}  {where}" + ("  [BROKEN]" if source.error else ""))
        if source.error:
            lines.append(f"        error: {source.error}")
    return lines


def _dataset(name: str) -> str:
    """The name, flagged when no installed catalog registers it (``zoo.data.resolve`` would refuse it)."""
    from zoo.data.catalog import get_dataset_spec
    from zoo.errors import ConfigError

    try:
        get_dataset_spec(name)
    except ConfigError:
        return f"{name} [NOT REGISTERED]"
    return name


def _where(name: str) -> str:
    """Whether dataset ``name`` is on this machine and where, else where it would be downloaded from or what to do
    (``zoo.data.resolve.locate``: existence checks only, nothing hashed or fetched)."""
    from zoo.data.resolve import locate

    try:
        return locate(name).describe()
    except ZooError as exc:
        return f"[NOT REGISTERED: {str(exc).splitlines()[0]}]"


def _catalog_names(target: str) -> list[str]:
    try:
        return [spec.name for spec in load_object(target)]
    except Exception:  # noqa: BLE001 - _catalog reports the failure
        return []


def _shown_datasets(spec: TaskSpec, named_by_tasks: set[str]) -> list[str]:
    """The datasets a task reads, then those its catalog registers that no task names (read without the
    catalogue's lookup, e.g. bundled with a library), each once."""
    extra = [name for name in _catalog_names(spec.catalog) if name not in named_by_tasks] if spec.catalog else []
    return list(dict.fromkeys([*spec.datasets, *extra]))


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
    """Print every registered task (its models, datasets and whether they are on this machine, configs and
    benchmark programs), then the routers and where each comes from."""
    if argv and argv[0] in ("-h", "--help"):
        print(
            "usage: zoo list [--no-routers]\n\nRegistered tasks, their datasets (and whether each is on this "
            "machine, would be downloaded or must be fetched by hand) and configs, and the routers (built-in or "
            "from which plugin distribution; --no-routers leaves them out and does not import torch)."
        )
        return 0
    loads = discover()
    named_by_tasks = {name for load in loads if load.spec is not None for name in load.spec.datasets}
    for load in loads:
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
        shown = _shown_datasets(spec, named_by_tasks)
        print("    data on this machine:" + ("" if shown else " nothing to fetch (the task names no dataset)"))
        for name in shown:
            print(f"      {name}: {_where(name)}")
        print(f"    benchmark rows: {len(spec.benchmark)}")
        for name, target in spec.benchmarks.items():
            print(f"    bench {name}: {target}")
    if "--no-routers" not in argv:
        print("\n".join(_routers()))
    sys.stdout.flush()
    return 0
