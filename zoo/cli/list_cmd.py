"""``zoo list``: registered tasks (and plugins that failed to load), their datasets, configs and the routers."""

from __future__ import annotations

import sys

from zoo.registry import discover


def _routers() -> str:
    try:
        from zoo.moe import ROUTERS
    except ImportError as exc:
        return f"(zoo.moe unavailable: {exc})"
    return ", ".join(sorted(ROUTERS))


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
            print(f"    datasets: {', '.join(spec.datasets)}")
        folder = spec.config_path("")
        configs = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*.yaml")) if folder.is_dir() else []
        print(f"    configs:  {folder} ({len(configs)}: {', '.join(configs[:8])}{' ...' if len(configs) > 8 else ''})")
        print(f"    benchmark rows: {len(spec.benchmark)}")
    if "--no-routers" not in argv:
        print(f"routers: {_routers()}")
    sys.stdout.flush()
    return 0
