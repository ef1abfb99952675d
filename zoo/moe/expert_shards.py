"""A rank's share of an expert bank: experts ``[first, first + n)`` of E, in the bank's own layout.

- stacked banks (``StackedExperts``: ffn, swiglu, lowrank, linear, or any bank whose parameters all have a leading
  expert axis of E): the same class, each parameter ``p[first:first + n]``, so ``experts.w1`` is (n, d, h) instead of
  (E, d, h);
- ``ModuleListExperts``: the n modules, renumbered from 0 (``experts.experts.<i>`` is global expert first + i).

``shard_bank_state`` / ``full_bank_key`` map between a full layer's expert entries and a shard's.
"""

from __future__ import annotations

import copy
import re

from torch import Tensor, nn

from zoo.moe.errors import ConfigError
from zoo.moe.experts import ModuleListExperts

_MODULE_KEY = re.compile(r"^experts\.(\d+)\.(.+)$")


def local_expert_bank(bank: nn.Module, first: int, count: int) -> nn.Module:
    """Experts ``[first, first + count)`` of ``bank`` as a new bank of the same kind (copies; ``bank`` is untouched).

    Copies rather than views, so the full bank can be freed. Consumes no random numbers.
    """
    if isinstance(bank, ModuleListExperts):
        return ModuleListExperts(nn.ModuleList(copy.deepcopy(bank.experts[e]) for e in range(first, first + count)))
    num = bank.num_experts
    if bank._modules or bank._buffers:
        raise ConfigError(f"cannot shard {type(bank).__name__}: only stacked parameters or a ModuleList shard")
    for name, p in bank._parameters.items():
        if p is not None and (p.dim() == 0 or p.shape[0] != num):
            raise ConfigError(f"cannot shard {type(bank).__name__}.{name}: shape {tuple(p.shape)} has no expert axis")
    local = copy.copy(bank)  # the bank's plain attributes; its own tables (hooks, parameters) are not shared
    local.__dict__.update({k: copy.copy(v) for k, v in bank.__dict__.items() if isinstance(v, dict)})
    local._parameters = {
        name: None
        if p is None
        else nn.Parameter(p.detach()[first : first + count].clone(), requires_grad=p.requires_grad)
        for name, p in bank._parameters.items()
    }
    local._buffers, local._modules = {}, {}
    local.num_experts, local.first_expert = count, first
    return local


def full_bank_key(key: str, first: int) -> str:
    """A shard's state-dict key inside the bank (``w1``, ``experts.0.weight``) -> the full bank's."""
    m = _MODULE_KEY.match(key)
    return f"experts.{first + int(m.group(1))}.{m.group(2)}" if m else key


def shard_bank_state(full: dict[str, Tensor], first: int, count: int, num_experts: int) -> dict[str, Tensor]:
    """A full bank's state dict (keys inside the bank) -> the shard of experts ``[first, first + count)``."""
    out = {}
    for key, value in full.items():
        m = _MODULE_KEY.match(key)
        if m:
            e = int(m.group(1))
            if first <= e < first + count:
                out[f"experts.{e - first}.{m.group(2)}"] = value
            continue
        if value.dim() == 0 or value.shape[0] != num_experts:
            raise ConfigError(f"expert entry {key!r} has shape {tuple(value.shape)}, not {num_experts} experts")
        out[key] = value[first : first + count]
    return out
