"""Save and restore the global RNG states with each checkpoint, so a resumed run continues the same random
stream (data shuffling, dropout, exploration noise) as an uninterrupted one."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytorch_lightning as pl
import torch


class RNGStateCheckpoint(pl.Callback):
    """Store python, numpy and torch CPU RNG states in the checkpoint; restore them when training resumes.

    Lightning re-seeds nothing on resume, so without this the shuffle order after a restart differs from the
    uninterrupted run's. States are stored as tensors and plain lists so checkpoints load with
    ``torch.load(weights_only=True)``.
    """

    def state_dict(self) -> dict[str, Any]:
        py_version, py_state, py_gauss = random.getstate()
        np_name, np_keys, np_pos, np_has_gauss, np_gauss = np.random.get_state()
        return {
            "torch": torch.get_rng_state(),
            "python": [py_version, list(py_state), py_gauss],
            "numpy": [
                np_name,
                torch.from_numpy(np_keys.astype(np.int64)),
                int(np_pos),
                int(np_has_gauss),
                float(np_gauss),
            ],
        }

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        torch.set_rng_state(state_dict["torch"])
        py_version, py_state, py_gauss = state_dict["python"]
        random.setstate((py_version, tuple(py_state), py_gauss))
        np_name, np_keys, np_pos, np_has_gauss, np_gauss = state_dict["numpy"]
        np.random.set_state((np_name, np_keys.numpy().astype(np.uint32), np_pos, np_has_gauss, np_gauss))
