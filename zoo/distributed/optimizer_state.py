"""Optimizer state of an expert-parallel model in the one-process layout, and back (world 1 <-> world P resharding).

A rank of an expert-parallel model holds E/P experts per layer, and its optimizer holds their state (Adam's moments)
at that size. ``gather_optimizer_state`` turns a rank's ``optimizer.state_dict()`` into the state of the same
optimizer over the whole model (each expert tensor gathered from the layer's group along its expert dimension, a
collective); ``shard_optimizer_state`` cuts such a state back to this rank's experts (no communication). Parameters
are found by identity: the indices of ``optimizer.state_dict()`` follow ``param_groups`` order, which is the same in
both layouts because converting a model to expert parallel keeps its parameters and their order (tensor-bank experts
only; a ModuleList bank changes its parameter count and is refused by the strategy).
"""

from __future__ import annotations

import copy
from typing import Any

import torch
from torch import Tensor, nn

from zoo.moe.collectives import gather_from_group
from zoo.moe.expert_parallel import ExpertParallelMoE


def _expert_slices(model: nn.Module, optimizer: torch.optim.Optimizer) -> dict[int, ExpertParallelMoE]:
    """Optimizer state index -> the expert-parallel layer whose expert bank holds that parameter."""
    layers = [m for m in model.modules() if isinstance(m, ExpertParallelMoE)]
    owner = {id(p): layer for layer in layers for p in layer.experts.parameters()}
    index, found = 0, {}
    for group in optimizer.param_groups:
        for p in group["params"]:
            if id(p) in owner:
                found[index] = owner[id(p)]
            index += 1
    return found


def _is_bank_state(value: Any, local_experts: int) -> bool:
    return isinstance(value, Tensor) and value.dim() > 0 and value.shape[0] == local_experts


def gather_optimizer_state(model: nn.Module, optimizer: torch.optim.Optimizer) -> dict[str, Any]:
    """``optimizer.state_dict()`` with every expert parameter's state tensors gathered to E experts (a collective
    over each expert-parallel layer's group: every rank calls it, in the same order)."""
    state = optimizer.state_dict()
    slices = _expert_slices(model, optimizer)
    out = copy.copy(state)
    out["state"] = dict(state["state"])
    for index, layer in sorted(slices.items()):
        entry = dict(state["state"].get(index, {}))
        for key, value in sorted(entry.items()):
            if _is_bank_state(value, layer.num_local_experts):
                entry[key] = torch.cat(list(gather_from_group(value, layer.group).unbind(0)))
        out["state"][index] = entry
    return out


def shard_optimizer_state(state: dict[str, Any], model: nn.Module, optimizer: torch.optim.Optimizer) -> dict[str, Any]:
    """A one-process optimizer state (``gather_optimizer_state``'s, or one saved at world 1) cut to this rank's
    experts, for ``optimizer.load_state_dict``; other entries pass through."""
    out = copy.copy(state)
    out["state"] = dict(state["state"])
    for index, layer in _expert_slices(model, optimizer).items():
        entry = dict(state["state"].get(index, {}))
        for key, value in entry.items():
            if _is_bank_state(value, layer.num_experts):
                entry[key] = value[layer.first_expert : layer.first_expert + layer.num_local_experts].clone()
        out["state"][index] = entry
    return out
