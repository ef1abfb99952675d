"""The Python API: what the ``zoo`` command does, from Python.

    >>> from zoo import api
    >>> api.list_tasks()                                   # ['c2gmoe', 'dronedino', ...]
    >>> model = api.create_model("c2gmoe", "cora_c2gmoe", router="topk", hidden=32)
    >>> run = api.load_run("runs/c2gmoe/cora_c2gmoe/20261206-101500")   # a zoo fit run folder, or a .ckpt in it
    >>> prediction = api.predict(run, split="test")       # the arrays `zoo predict` writes
    >>> prediction.outputs["probabilities"].shape          # (1000, 7)
    >>> prediction.save("my_predictions")                  # the CSV / JSON files and the picture

``create_model`` is timm's ``create_model`` idea: a task, one of its configs, a router and init arguments give the
model exactly as ``zoo fit`` would build it (the datamodule is built too when the model's shapes come from it:
``create_model`` then needs the dataset on this machine). ``load_run`` rebuilds a trained run (model in eval mode
with its checkpoint's weights, the resolved config, the datamodule) and ``predict`` applies the task's predictor
(:mod:`zoo.predict`). The ``zoo.moe`` layer library needs none of this: ``from zoo.moe import MoE``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from zoo.predict import Prediction, predict
from zoo.trained import TrainedRun, build, load_run

__all__ = [
    "Prediction",
    "TrainedRun",
    "build_run",
    "create_model",
    "list_configs",
    "list_routers",
    "list_tasks",
    "load_run",
    "predict",
]


def list_tasks() -> list[str]:
    """The names of the installed tasks (``zoo list``), sorted."""
    from zoo.registry import discover

    return sorted(load.spec.name for load in discover() if load.spec is not None)


def list_configs(task: str) -> list[str]:
    """The config names of ``task`` (``configs/<task>/<name>.yaml`` without ``.yaml``; subfolders with ``/``)."""
    from zoo.registry import get_task

    folder = get_task(task).config_path()
    return sorted(str(p.relative_to(folder).with_suffix("")) for p in folder.rglob("*.yaml"))


def list_routers() -> list[str]:
    """Every router name ``zoo.moe.make_router`` accepts: the built-in ones and installed plugins."""
    from zoo.moe import ROUTERS

    return sorted(ROUTERS)


def _config_file(task: str, config: str | None):
    from zoo.errors import ConfigError
    from zoo.registry import get_task

    spec = get_task(task)
    name = config or spec.default_config
    path = spec.config_path(name if name.endswith(".yaml") else f"{name}.yaml")
    if not path.is_file():
        raise ConfigError(f"{task} has no config {name!r}; its configs: {', '.join(list_configs(task))}")
    return spec, path


def build_run(task: str, config: str | None = None, overrides: Sequence[str] = ()) -> Any:
    """The model, datamodule and trainer of ``task``'s ``config`` (its default config when None) with command-line
    style ``overrides``, as ``zoo fit`` builds them, not trained: ``.model``, ``.datamodule``, ``.trainer``."""
    _, path = _config_file(task, config)
    return build(path, overrides)


def create_model(
    task: str, config: str | None = None, *, router: str | None = None, overrides: Sequence[str] = (), **init_args: Any
) -> Any:
    """``task``'s model from ``config`` with ``router`` (the task's ``router_arg``) and ``init_args`` (model
    init arguments, e.g. ``hidden=32``) over the config, untrained.

    Example: ``create_model("seer", "etth1_seer_96", router="expert_choice", d_model=64)``.
    """
    import json

    spec, _ = _config_file(task, config)
    args = [*(f"--model.init_args.{k}={json.dumps(v)}" for k, v in init_args.items())]
    if router is not None:
        args.append(f"--{spec.router_arg}.router={router}")
    return build_run(task, config, [*args, *overrides]).model
