"""Which share of the experts this process builds, read from the trainer's config before the model exists.

``zoo fit`` (LightningCLI) builds the task's module before the trainer and its strategy, so the strategy cannot tell
the model which experts to build. Under ``--trainer.strategy zoo.distributed.ExpertParallelStrategy`` the CLI builds
the model inside ``local_build(trainer_config)``: ``zoo.moe.local_expert_init`` for this process's rank, so each
`MoE` creates only the E / ep_size experts the strategy will keep, and the whole bank never exists on any process.

The rank comes from the launcher's environment: ``RANK`` (torchrun), ``SLURM_PROCID`` (srun), else Lightning's
``NODE_RANK * devices + LOCAL_RANK`` (its own launcher starts rank 0 first, with none of them set).
"""

from __future__ import annotations

import contextlib
import os
from typing import Any

from zoo.errors import ConfigError


def _strategy(trainer: Any) -> tuple[type | None, dict]:
    strategy = trainer.get("strategy") if hasattr(trainer, "get") else None
    class_path = strategy.get("class_path") if hasattr(strategy, "get") else None
    if not class_path:
        return None, {}
    from jsonargparse._util import import_object

    try:
        cls = import_object(class_path)
    except Exception:  # noqa: BLE001 - the trainer names a bad class path itself
        return None, {}
    args = strategy.get("init_args")
    return cls, dict(args) if args is not None else {}


def _devices_per_node(trainer: Any) -> int:
    devices = trainer.get("devices", 1)
    if isinstance(devices, (list, tuple)):
        return len(devices)
    if isinstance(devices, int) or (isinstance(devices, str) and devices.isdigit()):
        return int(devices)
    raise ConfigError(
        f"--trainer.devices {devices!r}: the expert_parallel strategy needs a number of processes "
        "(its experts are shared out before the trainer starts)"
    )


def _global_rank(devices: int) -> int:
    for name in ("RANK", "SLURM_PROCID"):
        if os.environ.get(name, "").isdigit():
            return int(os.environ[name])
    return int(os.environ.get("NODE_RANK", 0)) * devices + int(os.environ.get("LOCAL_RANK", 0))


def local_build(trainer: Any) -> contextlib.AbstractContextManager:
    """``zoo.moe.local_expert_init`` for this process when the trainer's strategy is an `ExpertParallelStrategy`
    (with its ``max_expert_mib`` as the budget); a context that does nothing otherwise."""
    from zoo.distributed.strategy import ExpertParallelStrategy

    cls, args = _strategy(trainer)
    if cls is None or not (isinstance(cls, type) and issubclass(cls, ExpertParallelStrategy)):
        return contextlib.nullcontext()
    devices = _devices_per_node(trainer)
    world = devices * int(trainer.get("num_nodes") or 1)
    ep = args.get("ep_size") or world
    if ep < 1 or world % ep:
        raise ConfigError(f"--trainer.strategy.ep_size {ep} does not divide the {world} processes")
    budget = args.get("max_expert_mib")
    from zoo.moe import local_expert_init

    return local_expert_init(_global_rank(devices) % ep, ep, None if budget is None else int(budget * (1 << 20)))
