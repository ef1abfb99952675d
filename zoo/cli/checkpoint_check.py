"""Read a checkpoint safely and check that it belongs to the run about to use it, with one line when not."""

from __future__ import annotations

import json
import pickle
import zipfile
from pathlib import Path
from typing import Any

from zoo.callbacks.run_identity import IDENTITY_KEY  # noqa: F401 - where check_identity's `saved` comes from
from zoo.errors import ConfigError

# Data settings that change how data is loaded, not which data: a resume may change them.
LOADING_KEYS = frozenset({"num_workers", "pin_memory", "persistent_workers", "prefetch_factor", "data_dir", "root"})


# How every file ``torch.save`` writes begins: a zip archive (the default since PyTorch 1.6), or the pickled magic
# number of the legacy format (``torch.serialization.MAGIC_NUMBER`` pickled with protocol 2).
ZIP_START = b"PK\x03\x04"
LEGACY_START = b"\x80\x02\x8a\x0al\xfc\x9cF\xf9 j\xa8P\x19"
NOT_A_CHECKPOINT = (
    "not a checkpoint: it is not a PyTorch checkpoint file at all (neither a torch.save zip archive nor a legacy "
    "PyTorch file); pass a .ckpt file that `zoo fit` wrote (in <run folder>/checkpoints/)"
)


def looks_like_torch_file(path: Path) -> bool:
    """Whether ``path`` begins as every file ``torch.save`` writes does (a damaged one may still fail to load)."""
    with open(path, "rb") as f:
        start = f.read(len(LEGACY_START))
    return start.startswith(ZIP_START) or start == LEGACY_START


def load_checkpoint(path: str | Path, flag: str = "--ckpt_path") -> dict[str, Any]:
    """``torch.load(path, weights_only=True)`` with one-line errors: a missing file, a file that is no PyTorch file
    at all (random bytes, text), a damaged or truncated one, or one holding arbitrary Python objects (which is
    refused, not unpickled)."""
    import torch

    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{flag} {path}: no such file")
    if not looks_like_torch_file(path):
        raise ConfigError(f"{flag} {path}: {NOT_A_CHECKPOINT}")
    try:
        ckpt = torch.load(path, weights_only=True, map_location="cpu", mmap=zipfile.is_zipfile(path))
    except pickle.UnpicklingError as exc:
        reason = "it holds Python objects other than tensors and plain data, which zoo never unpickles"
        if "weights_only" not in str(exc) and "global" not in str(exc).lower():
            reason = "it is not a PyTorch checkpoint (damaged, truncated or another format)"
        raise ConfigError(f"{flag} {path}: cannot load: {reason}") from None
    except Exception:  # noqa: BLE001 - whatever the unpickler trips on, the file is no checkpoint it can read
        raise ConfigError(
            f"{flag} {path}: cannot load: it is not a PyTorch checkpoint (damaged, truncated or another format)"
        ) from None
    if not isinstance(ckpt, dict) or "state_dict" not in ckpt:
        raise ConfigError(f"{flag} {path}: not a Lightning checkpoint (no 'state_dict' in it)")
    return ckpt


def plain(value: Any) -> Any:
    """``value`` as JSON data (paths and other objects as strings), as stored in a checkpoint."""
    return json.loads(json.dumps(value, default=str))


def run_identity(config: Any, run: str) -> dict[str, Any]:
    """What makes a checkpoint belong to a run: its model and data classes and their settings (from the parsed
    config namespace of one subcommand) and the config it was started from."""

    def part(name: str) -> tuple[str | None, dict]:
        node = config.get(name) if hasattr(config, "get") else None
        if node is None:
            return None, {}
        node = node.as_dict() if hasattr(node, "as_dict") else dict(node)
        return node.get("class_path"), plain(node.get("init_args") or {})

    model, model_args = part("model")
    data, data_args = part("data")
    return {"run": run, "model": model, "model_init_args": model_args, "data": data, "data_init_args": data_args}


def check_identity(saved: dict[str, Any] | None, current: dict[str, Any], path: Path, fitting: bool) -> None:
    """Refuse, in one line, a checkpoint whose model class (and, when fitting, the model's settings that this run
    states, the data class or the data settings other than how it is loaded) differ from the current run's.
    Checkpoints written before zoo stored this (``saved`` None) pass."""
    if not saved:
        return
    what = "resume from" if fitting else "load"
    fix = (
        "start a fresh run (drop --ckpt_path) or use the config it was trained with"
        if fitting
        else ("pass a checkpoint of this model")
    )
    if saved.get("model") != current.get("model"):
        raise ConfigError(
            f"--ckpt_path {path}: cannot {what} it: it holds a {saved.get('model')} (run {saved.get('run')}), this "
            f"run builds a {current.get('model')}; {fix}"
        )
    if not fitting:
        return
    if saved.get("data") != current.get("data"):
        raise ConfigError(
            f"--ckpt_path {path}: cannot resume from it: it was trained on {saved.get('data')} (run "
            f"{saved.get('run')}), this run loads {current.get('data')}; {fix}"
        )
    differ = []
    for part, ignored in (("model", frozenset()), ("data", LOADING_KEYS)):
        old, new = saved.get(f"{part}_init_args") or {}, current.get(f"{part}_init_args") or {}
        differ += [
            f"{part}.init_args.{k} is {old.get(k)!r} there, {new.get(k)!r} here"
            for k in sorted(set(old) | set(new))
            if k not in ignored
            and old.get(k) != new.get(k)
            # a model arg this config leaves None comes from the data (model_shapes) or the checkpoint's own
            # hyper-parameters, which Lightning puts into the config on resume: nothing to contradict
            and not (part == "model" and new.get(k) is None)
        ]
    if differ:
        raise ConfigError(
            f"--ckpt_path {path}: cannot resume from it (run {saved.get('run')}): {', '.join(differ[:3])}; {fix}"
        )


def check_state_dict(theirs: dict[str, tuple], model: Any, path: Path) -> None:
    """One line instead of Lightning's state-dict traceback when the checkpoint's weights (``theirs``: name ->
    shape) do not fit the model. Models with lazily shaped parameters are not checked, and a model that builds
    layers in its own ``setup()`` (which runs later, inside ``trainer.fit``/``test``) is not refused for weights
    it does not hold yet: only its missing and reshaped ones count."""
    import pytorch_lightning as pl
    from torch.nn.parameter import is_lazy

    state = model.state_dict()
    if any(is_lazy(v) for v in state.values()):
        return
    builds_in_setup = isinstance(model, pl.LightningModule) and type(model).setup is not pl.LightningModule.setup
    from zoo.moe.parallel_state_dict import one_process_shapes

    mine = one_process_shapes(model)  # a model holding a share of its experts is checked against whole banks
    missing = sorted(set(mine) - set(theirs))
    unexpected = [] if builds_in_setup else sorted(set(theirs) - set(mine))
    reshaped = sorted(k for k in set(mine) & set(theirs) if mine[k] != theirs[k])
    if not (missing or unexpected or reshaped):
        return
    parts = []
    if missing:
        parts.append(f"{len(missing)} weights missing (e.g. {missing[0]})")
    if unexpected:
        parts.append(f"{len(unexpected)} unexpected (e.g. {unexpected[0]})")
    if reshaped:
        k = reshaped[0]
        parts.append(f"{len(reshaped)} of another shape (e.g. {k}: {theirs[k]} there, {mine[k]} here)")
    raise ConfigError(f"--ckpt_path {path}: its weights do not fit this model: {'; '.join(parts)}")
