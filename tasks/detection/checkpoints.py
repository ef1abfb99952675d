"""Loading local weights with torch's safe ``weights_only`` unpickler.

mmengine checkpoints keep numpy arrays / scalars in their ``meta``, which torch's ``weights_only`` loader rejects:
exactly those numpy types are allowed through ``torch.serialization.add_safe_globals``. Loading never falls back
to ``weights_only=False``. A full training checkpoint whose ``message_hub`` holds mmengine ``HistoryBuffer`` s
unpickles through ``getattr``, which is not allowed (it would let a file call any attribute): such a file gives
one ``ConfigError`` telling the user to save its ``state_dict`` alone.
"""

from __future__ import annotations

import pickle
import re
from pathlib import Path

import numpy as np
import torch

from zoo.errors import ConfigError


def _numpy_globals() -> list:
    core = getattr(np, "_core", None) or np.core
    types = [core.multiarray._reconstruct, core.multiarray.scalar, np.ndarray, np.dtype]
    types += [type(np.dtype(t)) for t in (np.float16, np.float32, np.float64, np.int32, np.int64, np.uint8, np.bool_)]
    return types


def allow_checkpoint_globals() -> None:
    """Allow the numpy types that mmengine checkpoints' ``meta`` holds."""
    torch.serialization.add_safe_globals(_numpy_globals())


def load_state_dict(path: str | Path) -> dict[str, torch.Tensor]:
    """The state dict in ``path``: a plain state dict, or a checkpoint with ``state_dict`` / ``model`` inside."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise ConfigError(f"backbone_weights: file {path} does not exist")
    allow_checkpoint_globals()
    try:
        data = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as exc:
        found = re.search(r"Unsupported global: GLOBAL (\S+)", str(exc))
        reason = f"global {found.group(1)}" if found else "an unsupported object"
        raise ConfigError(
            f"backbone_weights: {path} holds objects the safe loader refuses ({reason}); save only its weights: "
            f"torch.save(torch.load(path, weights_only=False)['state_dict'], 'weights.pth') if you trust the file"
        ) from None
    for key in ("state_dict", "model"):
        if isinstance(data, dict) and isinstance(data.get(key), dict):
            data = data[key]
    if not isinstance(data, dict) or not all(isinstance(v, torch.Tensor) for v in data.values()):
        raise ConfigError(f"backbone_weights: {path} holds no state dict of tensors")
    return data
