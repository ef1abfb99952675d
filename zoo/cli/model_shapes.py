"""Model shapes read from the data: a LightningDataModule may define ``model_shapes() -> {init arg: value}`` (e.g.
``{"num_channels": 7}``), cheap and valid right after ``__init__``; ``ZooCLI`` writes those values into the model's
``init_args`` before the model is built, so the saved ``config.yaml``, records and resumes hold the real shapes."""

from __future__ import annotations

from typing import Any

from zoo.errors import ConfigError


def data_shapes(datamodule: Any) -> dict[str, Any]:
    """``datamodule.model_shapes()``, or {} when it has no such method."""
    method = getattr(datamodule, "model_shapes", None)
    if not callable(method):
        return {}
    shapes = method()
    if not isinstance(shapes, dict):
        raise TypeError(f"{type(datamodule).__name__}.model_shapes() must return a dict, got {type(shapes).__name__}")
    return shapes


def fill_model_shapes(model: Any, shapes: dict[str, Any], data_name: str) -> dict[str, Any]:
    """Set each ``shapes`` key that the model's ``init_args`` (a jsonargparse Namespace) leaves None; return what
    was filled. Keys the model does not take are ignored (a dense baseline may not need every shape).

    Raises:
        ConfigError: an explicit value contradicts the data, naming the key, both values and the data module.
    """
    init_args = model.get("init_args") if hasattr(model, "get") else None
    if init_args is None or not shapes:
        return {}
    filled = {}
    for key, value in shapes.items():
        if key not in init_args:
            continue
        given = init_args[key]
        if given is None:
            init_args[key] = filled[key] = value
        elif given != value:
            raise ConfigError(
                f"model.init_args.{key} is {given!r} in the config but the data has {value!r} (from {data_name}); "
                f"drop the key (it is read from the data) or set it to {value!r}"
            )
    return filled
