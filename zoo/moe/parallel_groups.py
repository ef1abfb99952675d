"""Expert- and data-parallel process groups, and the gradient reduction over them.

World = ep_size x dp_size ranks. Expert-parallel groups are runs of consecutive ranks, ``[i * ep, (i + 1) * ep)``:
they exchange tokens and each holds all E experts once. Data-parallel groups join the ranks that hold the same
experts, ``{j, j + ep, j + 2 ep, ...}``. With ep_size 2 on 4 ranks: ep groups {0, 1}, {2, 3}; dp groups {0, 2}, {1, 3}.

Gradients (``reduce_gradients``), after each rank backpropagated its own loss: every gradient is summed over its
group and divided by the world size, so each parameter gets the gradient of the mean of all ranks' losses:

- a replicated parameter (router, shared experts, the rest of the model): summed over all ranks / world, the mean;
- an expert parameter: summed over its dp group / world. Its gradient on a rank already sums the contributions of
  the tokens of every rank of its ep group (they came to it by all-to-all), so averaging over the dp group alone
  would leave it ep_size times too large; Megatron-Core scales expert gradients the same way.

``gradient_buckets`` is the plan (which parameter goes to which group): each parameter exactly once.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import torch
import torch.distributed as dist
from torch import nn
from torch._utils import _flatten_dense_tensors, _unflatten_dense_tensors

from zoo.moe.errors import ConfigError
from zoo.moe.expert_parallel import ExpertParallelMoE


@dataclass(frozen=True)
class ParallelGroups:
    """This rank's process groups: ``ep_group`` (ranks ``ep_ranks``, exchanging tokens) and ``dp_group`` (ranks
    ``dp_ranks``, holding the same experts), with ``world_size = ep_size * dp_size`` and ``rank`` in the world."""

    ep_size: int
    dp_size: int
    rank: int
    ep_ranks: tuple[int, ...]
    dp_ranks: tuple[int, ...]
    ep_group: object = field(repr=False, compare=False)
    dp_group: object = field(repr=False, compare=False)

    @property
    def world_size(self) -> int:
        return self.ep_size * self.dp_size


def build_parallel_groups(ep_size: int) -> ParallelGroups:
    """Split the default process group into ep and dp groups (a collective: every rank calls it, in the same order).

    The default group itself serves a group that spans every rank.
    """
    world, rank = dist.get_world_size(), dist.get_rank()
    if ep_size < 1 or world % ep_size:
        raise ConfigError(f"ep_size {ep_size} does not divide the world size {world}")
    dp_size = world // ep_size
    ep_sets = [tuple(range(i * ep_size, (i + 1) * ep_size)) for i in range(dp_size)]
    dp_sets = [tuple(range(j, world, ep_size)) for j in range(ep_size)]
    ep_group = dp_group = None
    for ranks in ep_sets:  # every rank creates every group (torch.distributed.new_group requires it)
        g = dist.group.WORLD if len(ranks) == world else dist.new_group(list(ranks))
        if rank in ranks:
            ep_group, ep_ranks = g, ranks
    for ranks in dp_sets:
        g = dist.group.WORLD if len(ranks) == world else dist.new_group(list(ranks))
        if rank in ranks:
            dp_group, dp_ranks = g, ranks
    return ParallelGroups(ep_size, dp_size, rank, ep_ranks, dp_ranks, ep_group, dp_group)


@dataclass
class GradientBucket:
    """Parameters whose gradients are summed over ``group`` (ranks ``ranks``) and divided by ``divisor``."""

    kind: str  # "replicated" or "expert"
    ranks: tuple[int, ...]
    group: object = field(repr=False)
    divisor: int
    names: list[str]
    params: list[nn.Parameter] = field(repr=False)


def _expert_parameter_ids(model: nn.Module, groups: ParallelGroups) -> set[int]:
    ids = set()
    for name, module in model.named_modules():
        if isinstance(module, ExpertParallelMoE):
            ranks = tuple(dist.get_process_group_ranks(module.group or dist.group.WORLD))
            if ranks != groups.ep_ranks:
                where = name or "model"
                raise ConfigError(f"{where}: its experts are spread over ranks {ranks}, not {groups.ep_ranks}")
            ids.update(id(p) for p in module.experts.parameters())
    return ids


def gradient_buckets(model: nn.Module, groups: ParallelGroups) -> list[GradientBucket]:
    """Every parameter of ``model`` that asks for a gradient, once: the experts of each `ExpertParallelMoE` in the
    dp group, everything else over all ranks; both divided by the world size."""
    experts = _expert_parameter_ids(model, groups)
    world = tuple(range(groups.world_size))
    replicated = GradientBucket("replicated", world, dist.group.WORLD, groups.world_size, [], [])
    expert = GradientBucket("expert", groups.dp_ranks, groups.dp_group, groups.world_size, [], [])
    for name, p in model.named_parameters():
        if p.requires_grad:
            bucket = expert if id(p) in experts else replicated
            bucket.names.append(name)
            bucket.params.append(p)
    return [b for b in (replicated, expert) if b.params]


def _chunks(params: list[nn.Parameter], max_bytes: int) -> Iterator[list[nn.Parameter]]:
    """Runs of parameters of one dtype and device, each under ``max_bytes`` (or a single parameter)."""
    run: list[nn.Parameter] = []
    size = 0
    for p in params:
        nbytes = p.numel() * p.element_size()
        if run and (size + nbytes > max_bytes or (p.dtype, p.device) != (run[0].dtype, run[0].device)):
            yield run
            run, size = [], 0
        run.append(p)
        size += nbytes
    if run:
        yield run


@torch.no_grad()
def reduce_gradients(model: nn.Module, groups: ParallelGroups, bucket_bytes: int = 64 << 20) -> None:
    """Reduce every gradient of ``model`` over its group (see the module docstring), in place, one all-reduce per
    run of up to ``bucket_bytes``. A parameter without a gradient on this rank (no token reached it) takes part
    with zeros and gets them. Every rank calls it after its backward."""
    for bucket in gradient_buckets(model, groups):
        for run in _chunks(bucket.params, bucket_bytes):
            for p in run:
                if p.grad is None:
                    p.grad = torch.zeros_like(p)
            grads = [p.grad for p in run]
            flat = _flatten_dense_tensors(grads)
            if len(bucket.ranks) > 1:
                dist.all_reduce(flat, group=bucket.group)
            flat.div_(bucket.divisor)
            for g, reduced in zip(grads, _unflatten_dense_tensors(flat, grads), strict=True):
                g.copy_(reduced)
