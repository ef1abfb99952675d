"""Stage-1 expert exports: what an :class:`~zoo_tasks.splatting.module.ExpertGS` run hands to the MoE-GS stage.

A trained expert is written as ``{"hparams": {...}, "state_dict": {...}, "steps": int, "val_psnr": float}`` to
``$ZOO_CACHE_DIR/moe_gs/experts/<export_name>__seed<seed>.pt`` (and ``expert.pt`` in its run folder). The MoE stage
names its experts by export name (looked up for its own seed) or by file path. A trained MoE-GS router is exported
the same way (its hparams name its experts) for the distillation stage.
"""

from __future__ import annotations

import os
from pathlib import Path

import torch

from zoo.data import cache_dir
from zoo.errors import ConfigError


def export_dir() -> Path:
    return cache_dir() / "moe_gs" / "experts"


def current_seed() -> int:
    """The run's seed (``seed_everything`` sets ``PL_GLOBAL_SEED``), 0 when unset."""
    return int(os.environ.get("PL_GLOBAL_SEED", "0"))


def export_path(name: str, seed: int | None = None) -> Path:
    return export_dir() / f"{name}__seed{current_seed() if seed is None else seed}.pt"


def save_export(path: Path, hparams: dict, state_dict: dict, steps: int, **extra) -> Path:
    """Write an export atomically; ``extra`` (e.g. ``val_psnr``) is stored beside the weights."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    torch.save({"hparams": dict(hparams), "state_dict": state_dict, "steps": steps, **extra}, tmp)
    os.replace(tmp, path)
    return path


def load_export(entry: str) -> tuple[dict, Path]:
    """An expert export by path (``*.pt``) or export name (this run's seed); raises ConfigError when missing."""
    path = Path(entry).expanduser() if entry.endswith(".pt") else export_path(entry)
    if not path.is_file():
        raise ConfigError(
            f"no export {path} for {entry!r}; train it first (zoo fit --config configs/moe_gs/<config>.yaml with "
            f"export_name={entry!r} and the same seed; zoo reproduce moe_gs runs the rows in dependency order) or give "
            "the path of a .pt export"
        )
    blob = torch.load(path, map_location="cpu", weights_only=False)
    for key in ("hparams", "state_dict"):
        if key not in blob:
            raise ConfigError(f"experts: {path} is not an expert export (no {key!r})")
    return blob, path
