"""Building only this process's experts: a model whose experts do not fit one process can still be constructed.

Inside ``local_expert_init(ep_rank, ep_size)``, every `MoE` built with a named expert type creates only its share of
the routed experts, ``[ep_rank * E / ep_size, (ep_rank + 1) * E / ep_size)``, the share that
``ExpertParallelMoE.from_layer`` would keep; the full bank never exists::

    with local_expert_init(ep_rank=dist.get_rank(), ep_size=dist.get_world_size(), max_bytes=8 << 30):
        model = build_model()          # each MoE's experts.w1 is (E / P, d, h); everything else is whole
    to_expert_parallel(model)          # keeps those banks as they are (no copy)

The share holds exactly the values the whole bank would hold at those experts, and the construction consumes the
same random numbers: a bank's weights are drawn expert after expert from the global generator (CPU ``uniform_`` on
a contiguous tensor draws element by element, so one draw of (E, d, h) equals E draws of (d, h) in order), the held
experts' draws kept, the others' drawn into one expert-sized scratch tensor and dropped. So the rest of the model,
built after the bank, is initialised as in a one-process build too, and a model built this way on every rank equals
the one-process model spread by ``to_expert_parallel``. On accelerators, whose generators are not sequential, build
on the CPU and move the model afterwards.

``max_bytes`` is a budget for the expert weights one process builds (the routed experts of every layer, not the
shared experts or routers): a layer that would pass it raises ConfigError before allocating anything. Gradients
and optimiser state grow with the weights (Adam: about 4 x the weights in training).

Shared experts (``num_shared``) and ModuleList banks are always built whole and are not counted.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from zoo.moe.errors import ConfigError


@dataclass
class _Share:
    ep_rank: int
    ep_size: int
    max_bytes: int | None
    built_bytes: int = 0


_ACTIVE: list[_Share] = []


@contextmanager
def local_expert_init(ep_rank: int, ep_size: int, max_bytes: int | None = None) -> Iterator[None]:
    """Build each `MoE`'s share ``ep_rank`` of ``ep_size`` of its routed experts (see the module docstring)."""
    if ep_size < 1 or not 0 <= ep_rank < ep_size:
        raise ConfigError(f"expert-parallel rank {ep_rank} is not one of {ep_size} ranks")
    _ACTIVE.append(_Share(ep_rank, ep_size, max_bytes))
    try:
        yield
    finally:
        _ACTIVE.pop()


def expert_share(num_experts: int) -> tuple[int, int] | None:
    """``(first, count)`` of the experts of an E-expert bank built now; None outside ``local_expert_init``."""
    if not _ACTIVE:
        return None
    share = _ACTIVE[-1]
    if num_experts % share.ep_size:
        raise ConfigError(f"{num_experts} experts do not split over ep_size {share.ep_size}")
    count = num_experts // share.ep_size
    return share.ep_rank * count, count


def _charge(nbytes: int) -> None:
    """Count ``nbytes`` of expert weights against the active budget (ConfigError past it); no-op outside."""
    if not _ACTIVE:
        return
    share = _ACTIVE[-1]
    share.built_bytes += nbytes
    if share.max_bytes is not None and share.built_bytes > share.max_bytes:
        mib = 1 << 20
        raise ConfigError(
            f"the experts this process builds need {share.built_bytes / mib:.1f} MiB of weights at ep_size "
            f"{share.ep_size}, over its budget of {share.max_bytes / mib:.1f} MiB: spread them over more processes "
            "(--trainer.devices N --trainer.strategy.ep_size N)"
        )


def expert_tensor(num_experts: int, shape: tuple[int, ...], fan_in: int | None, held: tuple[int, int] | None) -> Tensor:
    """Experts ``held`` = (first, count) (None: all) of an (E, *shape) bank parameter: nn.Linear's uniform init with
    bound 1 / sqrt(fan_in), or zeros when ``fan_in`` is None; drawn as the whole bank would be (module docstring)."""
    first, count = held or (0, num_experts)
    if held is not None:
        _charge(count * math.prod(shape) * torch.empty(0).element_size())
    if fan_in is None:
        return torch.zeros(count, *shape)
    bound = 1.0 / math.sqrt(fan_in)
    if count == num_experts:
        return nn.init.uniform_(torch.empty(num_experts, *shape), -bound, bound)
    out, scratch = torch.empty(count, *shape), torch.empty(shape)
    for e in range(num_experts):
        nn.init.uniform_(out[e - first] if first <= e < first + count else scratch, -bound, bound)
    return out
