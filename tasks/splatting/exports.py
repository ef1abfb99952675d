"""Stage-1 expert exports: what an :class:`~zoo_tasks.splatting.module.ExpertGS` run hands to the MoE-GS stage.

A trained expert is written as ``{"hparams": {...}, "state_dict": {...}, "steps": int, "val_psnr": float, "scene":
{"name": ..., "sha256": ...}}`` to ``$ZOO_CACHE_DIR/moe_gs/experts/<export_name>__seed<seed>.pt`` (and ``expert.pt``
in its run folder). The MoE stage names its experts by export name (looked up for its own seed) or by file path. A
trained MoE-GS router is exported the same way (its hparams name its experts) for the distillation stage.

Scenes: an export records the scene it was trained on (its name and content hash, ``DNeRFDataModule.scene_identity``)
and the MoE-GS and distillation stages refuse an export of another scene (:func:`check_scene`), since the export
names do not say the scene (the shipped configs write ``standup_*`` whatever scene they are given). An export written
before exports recorded their scene is checked by its name only: ``<catalogued scene>_...`` (``standup_mlp``, the
shipped names) must match the run's scene name; any other name is accepted as it is. A fit that would replace an
export of another scene at its end is refused at its start (:func:`refuse_replacing`).
"""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import torch

from zoo.data import cache_dir
from zoo.errors import ConfigError
from zoo_tasks.splatting.data import catalogued_scenes


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


def scene_of(datamodule: object) -> dict[str, str] | None:
    """The scene a datamodule serves, ``{"name", "sha256"}`` (``scene_identity()``); None when it has no such method."""
    method = getattr(datamodule, "scene_identity", None)
    return method() if callable(method) else None


def recorded_scene(blob: dict, path: Path) -> dict[str, str] | None:
    """The scene an export was trained on: ``{"name", "sha256"}`` as recorded; for an export written before exports
    recorded it, ``{"name": scene}`` when its file name is ``<catalogued scene>_...`` (as the shipped configs name
    them), else None (not known)."""
    scene = blob.get("scene")
    if isinstance(scene, dict) and scene.get("sha256"):
        return {"name": str(scene.get("name")), "sha256": str(scene["sha256"])}
    for name in catalogued_scenes():
        if path.name.startswith(f"{name}_"):
            return {"name": name}
    return None


def same_scene(recorded: dict[str, str] | None, scene: dict[str, str] | None) -> bool:
    """Whether an export's recorded scene is ``scene``: by content hash, or by name for an export without one;
    True when either is not known."""
    if recorded is None or scene is None:
        return True
    if "sha256" in recorded:
        return recorded["sha256"] == scene["sha256"]
    return recorded["name"] == scene["name"]


def _held(recorded: dict[str, str]) -> str:
    if "sha256" in recorded:
        return f"scene {recorded['name']!r} (content sha256 {recorded['sha256'][:12]})"
    return f"scene {recorded['name']!r} (by its name: it was written before exports recorded their scene)"


def check_scene(recorded: dict[str, str] | None, path: Path, scene: dict[str, str] | None, what: str) -> None:
    """Refuse, in one line, a ``what`` export (``path``) trained on another scene than the run's ``scene``."""
    if same_scene(recorded, scene):
        return
    raise ConfigError(
        f"{what} export {path} was trained on {_held(recorded)}, not on this run's scene {scene['name']!r} "
        f"(content sha256 {scene['sha256'][:12]}): train the experts on this scene first (its own stage-1 / stage-2 "
        "runs with their own --model.init_args.export_name, docs/tasks/moe_gs.md), or give the path of the matching "
        ".pt export"
    )


def refuse_replacing(path: Path, scene: dict[str, str] | None, new_name: str) -> None:
    """At the start of a fit that will write export ``path``: refuse when ``path`` holds another scene's export,
    which the fit would silently replace (``new_name`` is the export name suggested instead)."""
    if scene is None or not path.is_file():
        return
    try:
        blob = torch.load(path, map_location="cpu", weights_only=False)
    except (OSError, RuntimeError, EOFError, pickle.UnpicklingError):
        return  # an unreadable export is replaced
    recorded = recorded_scene(blob, path) if isinstance(blob, dict) else None
    if same_scene(recorded, scene):
        return
    raise ConfigError(
        f"export_name: {path} holds the export of {_held(recorded)}, which this fit on scene {scene['name']!r} would "
        f"replace: give this scene's run its own name (--model.init_args.export_name {new_name}), or delete {path}"
    )
