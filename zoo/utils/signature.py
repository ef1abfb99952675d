"""The keyword defaults of a class's or function's signature: what a LightningModule that takes its network's
arguments as ``**network`` (and passes them on in one call, so jsonargparse lists them as its own) merges in
before ``save_hyperparameters()``, so that a model built in Python saves every argument, as a config gives them."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any


def signature_defaults(build: Callable) -> dict[str, Any]:
    """``{name: default}`` for every parameter of ``build`` that has a default."""
    params = inspect.signature(build).parameters.values()
    return {p.name: p.default for p in params if p.default is not inspect.Parameter.empty}
