"""`ExpertParallelMoE`: a `zoo.moe.MoE` whose E experts are spread over the ranks of a process group.

Rank q of a group of P ranks holds experts ``[q * E / P, (q + 1) * E / P)``; the router, the shared experts and
every other parameter are replicated. Each rank routes its own tokens (x (..., dim) -> routing over its T tokens),
then (Lepikhin et al. 2020, GShard; Fedus et al. 2021, Switch)::

    counts   one all-gather of the slot counts: every rank learns every split size, the capacity and the load
    dispatch all-to-all of the routed rows (N, d), sorted by expert, to the ranks that hold their experts
    experts  the same ``forward_sorted`` segment kernel on the received rows, regrouped by local expert
    return   all-to-all of the outputs (N, o) back to where each row came from
    combine  weighted scatter-add into this rank's tokens, as ``zoo.moe.dispatch_combine``

Inside a group, the layer means what one `MoE` means on the concatenation of the ranks' tokens (in rank order):
the same outputs for each rank's tokens, the same capacity and dropped slots, the same aux-loss values (on every
rank) and the same router state updates; see ``zoo.moe.parallel_routing``. Each rank's `Routing` covers its own
tokens, so routing summaries of the ranks add up (``RoutingSummary.merge``) to the one-process summary.

Gradients: each rank backpropagates its own loss; ``zoo.moe.parallel_groups.reduce_gradients`` then gives every
parameter the gradient of the mean of the ranks' losses (data parallel's convention).

Build one from a model's layer (``from_layer`` keeps only this rank's experts' weights, or takes a layer built with
only them, ``zoo.moe.local_expert_init``) or convert every `MoE` of a
model in place (``to_expert_parallel``); ``zoo.moe.parallel_state_dict`` gathers and shards state dicts between
this layout and the one-process one.
"""

from __future__ import annotations

import copy

import torch
import torch.distributed as dist
from torch import Tensor, nn

from zoo.moe.collectives import all_to_all, gather_from_group, group_size
from zoo.moe.dispatch import sort_by_expert
from zoo.moe.errors import ConfigError
from zoo.moe.expert_shards import local_expert_bank
from zoo.moe.layer import MoE
from zoo.moe.losses import erc_loss
from zoo.moe.parallel_routing import (
    RouterStateSync,
    apply_global_capacity,
    exchange_counts,
    global_aux_losses,
)
from zoo.moe.routing import MoEOutput, Routing


class _GroupRef:
    """Holds a process group on a module; a deep copy of the module (EMA, SWA) shares the group."""

    def __init__(self, group):
        self.group = group

    def __deepcopy__(self, memo):
        return self


class ExpertParallelMoE(MoE):
    """`MoE` with this rank's E / P experts; tokens reach their experts by all-to-all over ``group``.

    Same parameter names as `MoE` (state-dict keys unchanged); the expert entries hold E / P experts:
    ``experts.w1`` (E / P, d, h), ..., or ``experts.experts.<i>`` for global expert ``first_expert + i``.
    Attributes: ``num_experts`` (E, global), ``num_local_experts``, ``first_expert``, ``ep_size``, ``ep_rank``,
    ``group``. Shapes as `MoE`: ``forward(x (..., dim), condition, valid) -> MoEOutput`` over this rank's tokens.

    Every rank of the group must call forward (and backward) the same number of times, with the same
    ``requires_grad`` on its input, and weight the aux losses alike (they run the same code). A router that picks
    tokens by the batch (expert choice) is refused: its choice on one rank's tokens is not the one-process choice.
    """

    def __init__(self, *args, **kwargs):
        raise TypeError("build an ExpertParallelMoE with ExpertParallelMoE.from_layer(MoE(...), group)")

    @classmethod
    def from_layer(cls, layer: MoE, group=None) -> ExpertParallelMoE:
        """A copy of ``layer`` that keeps only this rank's experts (copies: ``layer`` is untouched; a layer built with
        this rank's share only, under ``zoo.moe.local_expert_init``, gives its bank as it is). Collective-free.

        ``group``: the expert-parallel process group (None: the default group); E must divide by its size.
        Consumes no random numbers.
        """
        if type(layer) is not MoE:
            raise ConfigError(f"from_layer converts a zoo.moe.MoE, not {type(layer).__name__}")
        if not getattr(layer.router, "per_token_choice", True):
            raise ConfigError(
                f"router {type(layer.router).__name__} picks tokens by the batch: on one rank's tokens it would not "
                "route as one process does; expert parallelism needs a per-token router"
            )
        size, rank = dist.get_world_size(group), dist.get_rank(group)
        if layer.num_experts % size:
            raise ConfigError(f"{layer.num_experts} experts do not split over {size} expert-parallel ranks")
        count = layer.num_experts // size
        bank = layer.experts
        if bank.num_experts == layer.num_experts:
            bank = local_expert_bank(bank, rank * count, count)
        elif (bank.first_expert, bank.num_experts) != (rank * count, count):  # built as a share (local_expert_init)
            raise ConfigError(
                f"the layer holds experts [{bank.first_expert}, {bank.first_expert + bank.num_experts}) of "
                f"{layer.num_experts}, not rank {rank}'s [{rank * count}, {rank * count + count}) of {size} ranks"
            )
        state = copy.deepcopy(layer.__dict__, {id(layer.experts): bank})  # everything but the full bank is copied
        new = cls.__new__(cls)
        new.__dict__.update(state)
        new._group = _GroupRef(group)
        new.ep_size, new.ep_rank = size, rank
        new.num_local_experts, new.first_expert = count, rank * count
        return new

    @property
    def group(self):
        """The expert-parallel process group (None: the default group)."""
        return self._group.group

    def forward(self, x: Tensor, condition: Tensor | None = None, valid: Tensor | None = None) -> MoEOutput:
        lead, x2, condition, valid2 = self.flat_inputs(x, condition, valid)
        sync = RouterStateSync(self.router)
        sync.before()
        routing = self.router(x2, condition=condition, valid=valid2)
        capacity = self.capacity_factor is not None
        counts = exchange_counts(routing, self.group, by_slot=capacity, fixed_k=self.router.fixed_k)
        sync.after(counts)
        if capacity:
            routing, kept = apply_global_capacity(routing, counts, self.capacity_factor)
        else:
            kept = counts.slots.sum(1)
        routing.aux = global_aux_losses(self.router, routing, kept, counts, self.group)
        y = self._dispatch_combine(x2, routing, kept)
        if self.shared is not None:
            y = y + self.shared.forward_sorted(x2, [x2.shape[0]])
        return MoEOutput(y.reshape(*lead, y.shape[-1]), routing)

    def _dispatch_combine(self, x: Tensor, routing: Routing, kept: Tensor) -> Tensor:
        """``zoo.moe.dispatch_combine`` with the expert segments run where their experts live.

        kept: (P, E) rows each rank sends each expert. Rows of one expert arrive in rank order, each rank's in its
        token order: the order one process sorts the concatenated batch in, so each expert sees the same rows.
        Each exchange's backward runs on every rank when it runs on any: rows ask for a gradient when the input does
        (the dispatch) or when the input or the experts do (the return), alike on every rank.
        """
        grad = torch.is_grad_enabled()
        join_dispatch = grad and x.requires_grad
        join_return = join_dispatch or (grad and any(p.requires_grad for p in self.experts.parameters()))
        P, n = self.ep_size, self.num_local_experts
        slot_ids, token_ids, counts = sort_by_expert(routing.indices, routing.num_experts, routing.valid)
        if counts != kept[self.ep_rank].tolist():
            raise RuntimeError(f"rank {self.ep_rank}: routed counts {counts} differ from the group's {kept}")
        mine = kept[:, self.first_expert : self.first_expert + n]  # (P, n) rows each rank sends to my experts
        send = [sum(counts[q * n : (q + 1) * n]) for q in range(P)]
        recv = mine.sum(1).tolist()
        received = all_to_all(x.index_select(0, token_ids), send, recv, self.group, join_dispatch)
        # received rows: by source rank, then local expert; the experts want them by local expert, then source rank
        block = torch.repeat_interleave(torch.arange(P * n, device=x.device), mine.reshape(-1).to(x.device))
        by_expert = torch.argsort((block % n) * P + block // n, stable=True)
        y_local = self._local_experts(received.index_select(0, by_expert), mine.sum(0).tolist())
        y_received = torch.empty_like(y_local).index_copy(0, by_expert, y_local)
        y_sorted = all_to_all(y_received, recv, send, self.group, join_return)
        w = routing.weights.reshape(-1).index_select(0, slot_ids).to(y_sorted.dtype)
        out = y_sorted.new_zeros(x.shape[0], self.out_dim)
        return out.index_add(0, token_ids, y_sorted * w[:, None])

    def _local_experts(self, rows: Tensor, counts: list[int]) -> Tensor:
        """This rank's experts on their rows (N, d) -> (N, o); with no rows, an empty output still joined to
        ``rows`` in the graph, so that the dispatch's backward exchange runs here as on the other ranks."""
        if rows.shape[0]:
            return self.experts.forward_sorted(rows, counts)
        return rows.new_zeros(0, self.out_dim) + rows.sum() * 0

    def erc_loss(self, noise_std: float = 0.1, alpha: float = 1.0) -> Tensor:
        """`MoE.erc_loss` over all E experts: each rank measures its experts on the E proxies, the group shares the
        columns (the proxies of the group's first rank are used everywhere; each rank draws them, as one process
        does, so its random stream advances alike)."""
        w = self.router.gate.weight
        if w.shape[0] != self.num_experts:
            raise ConfigError(
                f"erc loss needs one router row per expert; {type(self.router).__name__} has "
                f"{w.shape[0]} rows for {self.num_experts} experts"
            )
        return erc_loss(w[:, : self.dim], _GroupActivationNorms(self), noise_std, alpha)

    def extra_repr(self) -> str:
        return (
            f"{super().extra_repr()}, ep_size={self.ep_size}, ep_rank={self.ep_rank}, "
            f"local_experts=[{self.first_expert}, {self.first_expert + self.num_local_experts})"
        )


class _GroupActivationNorms:
    """``activation_norms(proxies (E, d)) -> (E, E)`` for ``zoo.moe.losses.erc_loss``: column e is expert e's norms,
    computed on the rank that holds it and all-gathered; this rank's columns carry P times their gradient (see
    ``zoo.moe.collectives.global_sum`` for why P)."""

    def __init__(self, layer: ExpertParallelMoE):
        self.layer = layer

    def activation_norms(self, proxies: Tensor) -> Tensor:
        layer, group = self.layer, self.layer.group
        if group_size(group) > 1:
            first = proxies.detach().clone()
            dist.broadcast(first, src=dist.get_global_rank(group or dist.group.WORLD, 0), group=group)
            proxies = first + (proxies - proxies.detach())
        bank = layer.experts
        if hasattr(bank, "activation_norms"):
            local = bank.activation_norms(proxies)
        else:
            local = bank.forward_dense(proxies).flatten(2).norm(dim=-1)
        columns = list(gather_from_group(local, group).unbind(0))
        scaled = local * layer.ep_size
        columns[layer.ep_rank] = columns[layer.ep_rank] + (scaled - scaled.detach())
        return torch.cat(columns, dim=1)


def to_expert_parallel(model: nn.Module, group=None) -> nn.Module:
    """Replace every `MoE` in ``model`` by its ``ExpertParallelMoE.from_layer(layer, group)``, in place; returns
    ``model`` (or the converted layer when ``model`` is itself a `MoE`)."""
    if type(model) is MoE:
        return ExpertParallelMoE.from_layer(model, group)
    for name, child in list(model.named_children()):
        setattr(model, name, to_expert_parallel(child, group))
    return model
