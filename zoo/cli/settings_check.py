"""Settings ``zoo fit`` refuses in one line before it builds anything: a learning rate that is not a finite number
above 0, a fit of 0 epochs or steps, and a resume whose checkpoint has already reached the run's length."""

from __future__ import annotations

import math
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from zoo.errors import ConfigError

# Settings named like a learning rate that are not one: the shape of a schedule (`lr_end` may be 0, `lr_decay` is a
# factor, `lr_drop_epochs` a list of epochs).
SCHEDULE_WORDS = ("end", "min", "decay", "drop", "fraction", "warmup", "gamma", "factor", "schedule", "step", "epoch")
# Lightning's Trainer: max_epochs None means 1000 when neither max_steps nor max_time bounds the fit
DEFAULT_MAX_EPOCHS = 1000


def is_learning_rate(key: str) -> bool:
    """Whether init arg ``key`` is a learning rate: ``lr``, ``learning_rate``, ``*_lr`` / ``*_learning_rate``
    (``finetune_lr``, ``backbone_lr``) or ``lr_<parameter group>`` (``lr_means``, ``lr_weights``), but not a
    schedule setting (``lr_end``, ``lr_decay``, ``lr_drop_epochs``)."""
    if key in ("lr", "learning_rate") or key.endswith(("_lr", "_learning_rate")):
        return True
    return key.startswith("lr_") and not any(word in key for word in SCHEDULE_WORDS)


def _bad_rate(value: Any) -> bool:
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    return number and not (math.isfinite(value) and value > 0)


def check_learning_rates(init_args: Any, prefix: str) -> None:
    """Refuse, naming the option, a learning rate among ``init_args`` (a class's settings, option names
    ``--<prefix>.<key>``; nested settings are searched too) that is not a finite number above 0; a dict of rates
    (one per parameter group) is checked entry by entry. None (the class's own default) passes."""
    if hasattr(init_args, "as_dict"):  # a jsonargparse Namespace
        init_args = init_args.as_dict()
    for key, value in (init_args or {}).items():
        option = f"--{prefix}.{key}"
        if not is_learning_rate(str(key)):
            if isinstance(value, Mapping):
                check_learning_rates(value, option[2:])
            continue
        entries = value.items() if isinstance(value, Mapping) else [(None, value)]
        for entry, rate in entries:
            if _bad_rate(rate):
                named = option + (f".{entry}" if entry is not None else "")
                raise ConfigError(
                    f"{named} {rate}: a learning rate must be a finite number above 0; give e.g. {named} 0.001"
                )


def check_fit_length(trainer: Mapping[str, Any]) -> None:
    """Refuse a fit that would train nothing: ``max_epochs`` or ``max_steps`` of 0 (or below -1, Lightning's
    "no limit")."""
    for key in ("max_epochs", "max_steps"):
        value = trainer.get(key)
        if value is not None and (value == 0 or value < -1):
            raise ConfigError(
                f"--trainer.{key} {value}: a fit needs at least 1 (or -1 for no limit); to evaluate a trained model "
                "use `zoo test --ckpt_path FILE`"
            )


def _max_epochs(trainer: Mapping[str, Any]) -> int:
    """The epoch limit the Trainer will use (-1: none)."""
    value = trainer.get("max_epochs")
    if value is not None:
        return value
    unbounded = trainer.get("max_steps", -1) in (-1, None) and trainer.get("max_time") is None
    return DEFAULT_MAX_EPOCHS if unbounded else -1


def finished_epochs(checkpoint: Mapping[str, Any]) -> int | None:
    """The epochs a Lightning checkpoint has finished (its fit loop's processed epochs), or None when it does not
    say (a weights-only checkpoint)."""
    try:
        return int(checkpoint["loops"]["fit_loop"]["epoch_progress"]["current"]["processed"])
    except (KeyError, TypeError, ValueError):
        return None


def check_more_to_train(
    checkpoint: Mapping[str, Any], trainer: Mapping[str, Any], path: Path, configs: Sequence[str]
) -> None:
    """Refuse to resume ``checkpoint`` (read from ``path``) when its run already has the epochs (or steps) that
    ``trainer`` asks for: Lightning would start, train nothing and stop; say how to train more or test it."""
    test = shlex.join(["zoo", "test", *(a for c in configs for a in ("--config", str(c))), "--ckpt_path", str(path)])
    epochs, limit = finished_epochs(checkpoint), _max_epochs(trainer)
    if epochs is not None and limit != -1 and epochs >= limit:
        raise ConfigError(
            f"--ckpt_path {path}: the run already has {epochs} epochs, so --trainer.max_epochs {limit} leaves "
            f"nothing to train; give a --trainer.max_epochs above {epochs} to train more, or test it: {test}"
        )
    steps, max_steps = checkpoint.get("global_step"), trainer.get("max_steps")
    if isinstance(steps, int) and max_steps not in (None, -1) and steps >= max_steps:
        raise ConfigError(
            f"--ckpt_path {path}: the run already has {steps} steps, so --trainer.max_steps {max_steps} leaves "
            f"nothing to train; give a --trainer.max_steps above {steps} to train more, or test it: {test}"
        )
