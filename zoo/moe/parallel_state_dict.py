"""State dicts between the expert-parallel layout and the one-process one (for checkpoints and resharding).

A model whose `MoE` layers became `ExpertParallelMoE` keeps every key; only the expert entries of each such layer
hold this rank's E / P experts. ``gather_state_dict`` rebuilds the one-process state dict (every rank gets it), and
``shard_state_dict`` cuts a one-process state dict down to this rank's share, ready for ``load_state_dict``::

    full = gather_state_dict(ep_model)                      # world P -> the layout of MoE(...) on one process
    ep_model.load_state_dict(shard_state_dict(full, ep_model))   # and back, for any P that divides E
"""

from __future__ import annotations

import torch
import torch.distributed as dist
from torch import Tensor, nn

from zoo.moe.collectives import gather_from_group, group_size
from zoo.moe.expert_parallel import ExpertParallelMoE
from zoo.moe.expert_shards import full_bank_key, shard_bank_state
from zoo.moe.experts import ModuleListExperts
from zoo.moe.layer import MoE


def _expert_layers(model: nn.Module) -> list[tuple[str, ExpertParallelMoE]]:
    """(``prefix.experts.``, layer) for every `ExpertParallelMoE` in ``model``."""
    return [
        (f"{name}.experts." if name else "experts.", m)
        for name, m in model.named_modules()
        if isinstance(m, ExpertParallelMoE)
    ]


def _split(state: dict[str, Tensor], prefix: str) -> dict[str, Tensor]:
    return {k[len(prefix) :]: v for k, v in state.items() if k.startswith(prefix)}


def _replaced(state: dict[str, Tensor], prefix: str, entries: dict[str, Tensor]) -> dict[str, Tensor]:
    """``state`` with its ``prefix`` entries replaced by ``entries`` (keys inside ``prefix``), in their place."""
    out: dict[str, Tensor] = {}
    placed = False
    for key, value in state.items():
        if not key.startswith(prefix):
            out[key] = value
        elif not placed:
            out.update({prefix + k: v for k, v in entries.items()})
            placed = True
    return out


def gather_state_dict(model: nn.Module) -> dict[str, Tensor]:
    """``model.state_dict()`` in the one-process layout: each expert-parallel layer's experts gathered from its group
    (a collective over each such group: every rank calls it; every rank gets the whole state dict)."""
    state = model.state_dict()
    for prefix, layer in _expert_layers(model):
        local = _split(state, prefix)
        if isinstance(layer.experts, ModuleListExperts):
            shards: list = [(layer.first_expert, local)] * group_size(layer.group)
            if len(shards) > 1:  # experts may differ in shape: gather them as objects
                dist.all_gather_object(shards, (layer.first_expert, local), group=layer.group)
            full = {full_bank_key(k, first): v for first, part in shards for k, v in part.items()}
        else:
            full = {k: torch.cat(list(gather_from_group(v, layer.group).unbind(0))) for k, v in local.items()}
        state = _replaced(state, prefix, full)
    return state


def shard_state_dict(state_dict: dict[str, Tensor], model: nn.Module) -> dict[str, Tensor]:
    """A one-process state dict (``MoE`` layout) -> this rank's, for ``model.load_state_dict``; no communication.

    Each expert-parallel layer of ``model`` keeps its experts ``[first_expert, first_expert + num_local_experts)``;
    every other entry passes through. Raises ConfigError when an expert entry does not hold the layer's E experts.
    """
    state = dict(state_dict)
    for prefix, layer in _expert_layers(model):
        full = _split(state, prefix)
        part = shard_bank_state(full, layer.first_expert, layer.num_local_experts, layer.num_experts)
        state = _replaced(state, prefix, part)
    return state


def one_process_shapes(model: nn.Module) -> dict[str, tuple[int, ...]]:
    """``model``'s state-dict shapes in the one-process layout, which checkpoints hold: the entries of a bank that
    holds a share of its experts (built under ``local_expert_init``, or an ``ExpertParallelMoE``'s) count all E."""
    shapes = {k: tuple(v.shape) for k, v in model.state_dict().items() if hasattr(v, "shape")}
    for name, layer in model.named_modules():
        bank = getattr(layer, "experts", None)
        if not isinstance(layer, MoE) or bank.num_experts == layer.num_experts or not hasattr(bank, "first_expert"):
            continue
        prefix = f"{name}.experts." if name else "experts."
        for key in bank.state_dict():
            shape = shapes[prefix + key]
            shapes[prefix + key] = (layer.num_experts, *shape[1:])
    return shapes
