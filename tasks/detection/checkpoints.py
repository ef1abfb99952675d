"""Loading local weights with torch's safe ``weights_only`` unpickler.

mmengine checkpoints keep numpy arrays / scalars (and mmengine's ``HistoryBuffer``) in their ``meta`` and
``message_hub`` entries, which torch's ``weights_only`` loader rejects. Exactly those types are allowed through
``torch.serialization.add_safe_globals``; loading never falls back to ``weights_only=False``.
"""

from __future__ import annotations

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
    """Allow the numpy types (and mmengine's HistoryBuffer, when installed) that mmengine checkpoints hold."""
    extra = _numpy_globals()
    try:
        from mmengine.logging.history_buffer import HistoryBuffer

        extra.append(HistoryBuffer)
    except ImportError:
        pass
    torch.serialization.add_safe_globals(extra)


def load_state_dict(path: str | Path) -> dict[str, torch.Tensor]:
    """The state dict in ``path``: a plain state dict, or a checkpoint with ``state_dict`` / ``model`` inside."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise ConfigError(f"backbone_weights: file {path} does not exist")
    allow_checkpoint_globals()
    data = torch.load(path, map_location="cpu", weights_only=True)
    for key in ("state_dict", "model"):
        if isinstance(data, dict) and isinstance(data.get(key), dict):
            data = data[key]
    if not isinstance(data, dict) or not all(isinstance(v, torch.Tensor) for v in data.values()):
        raise ConfigError(f"backbone_weights: {path} holds no state dict of tensors")
    return data
