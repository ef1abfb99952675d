"""What a routing means over a process group: the one-process meaning of capacity, aux losses and router state.

The ranks of an expert-parallel group route their own tokens; seen together they are one batch, the concatenation
of their tokens in rank order, and every global quantity here is that batch's:

- ``exchange_counts``: one all-gather of the integer slot counts, (P, K, E) per rank, slot column and expert, and the
  real tokens per rank. Every rank then knows every count (the all-to-all split sizes come from it).
- ``apply_global_capacity``: Switch/GShard dropping with the capacity of the whole batch and its priority (slot j of
  every token of rank 0, then of rank 1, ..., then slot j + 1), as ``zoo.moe.apply_capacity`` on the concatenation.
- ``global_aux_losses``: "load_balance", "z", "cv_squared", "entropy" (and the Dirichlet router's "sparsity") of the
  whole batch; each rank gets the same value, and gradients that, averaged over the ranks, are the one-process ones.
- ``RouterStateSync``: a router whose state update reads its batch (dtop_p's threshold controller) updates from the
  global batch, so its state stays identical on every rank. (sigmoid_bias all-reduces its load itself.)
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch
import torch.distributed as dist
from torch import Tensor

from zoo.moe.collectives import gather_from_group, global_sum, group_size
from zoo.moe.dispatch import expert_capacity
from zoo.moe.losses import _cv_squared
from zoo.moe.routers import Router
from zoo.moe.routers.dirichlet import DirichletRouter
from zoo.moe.routers.dtop_p import DTopPRouter
from zoo.moe.routers.grouped import GroupedRouter
from zoo.moe.routing import Routing


@dataclass
class GroupCounts:
    """Every rank's routing counts (exact integers), the same on every rank of the group.

    slots: (P, K, E) live slots of real tokens per rank, slot column and expert (K = 1, summed over the columns,
        when no capacity needs the columns). tokens: (P,) real tokens per rank. rank: this rank's index in the group.
    """

    slots: Tensor
    tokens: Tensor
    rank: int

    @property
    def num_tokens(self) -> int:
        """Real tokens of the whole batch."""
        return int(self.tokens.sum())

    def expert_totals(self) -> Tensor:
        """(E,) live slots per expert over the whole batch."""
        return self.slots.sum((0, 1))


def _live(routing: Routing) -> Tensor:
    return (routing.indices >= 0) & routing.token_mask()[:, None]


def local_counts(routing: Routing, columns: int | None) -> Tensor:
    """This rank's counts as one long vector: live slots of real tokens per (slot column, expert), ``columns * E``
    entries (per expert only, E entries, when ``columns`` is None), then the real tokens.
    ``columns`` >= ``routing.indices.shape[1]``: the widest rank's."""
    E, device = routing.num_experts, routing.indices.device
    live = _live(routing)
    column = torch.arange(routing.indices.shape[1], device=device).expand_as(routing.indices)
    key = routing.indices + (E * column if columns is not None else 0)
    counts = torch.bincount(key[live], minlength=(columns or 1) * E)
    return torch.cat([counts, routing.token_mask().sum().reshape(1)])


def group_counts(gathered: Tensor, num_experts: int, rank: int) -> GroupCounts:
    """(P, K * E + 1) stacked ``local_counts`` of the group's ranks -> `GroupCounts` for rank ``rank``."""
    P = gathered.shape[0]
    return GroupCounts(gathered[:, :-1].reshape(P, -1, num_experts), gathered[:, -1], rank)


def exchange_counts(routing: Routing, group, by_slot: bool, fixed_k: bool) -> GroupCounts:
    """All-gather this rank's slot counts (one collective; two for a router without a fixed k, by slot).

    ``by_slot``: count per slot column (capacity priority needs it); the columns are the widest rank's, K_max.
    """
    columns = routing.indices.shape[1] if by_slot else None
    if by_slot and not fixed_k and group_size(group) > 1:
        k = torch.tensor([columns], device=routing.indices.device)
        dist.all_reduce(k, op=dist.ReduceOp.MAX, group=group)
        columns = int(k)
    gathered = gather_from_group(local_counts(routing, columns), group)
    return group_counts(gathered, routing.num_experts, dist.get_rank(group))


def apply_global_capacity(routing: Routing, counts: GroupCounts, capacity_factor: float) -> tuple[Routing, Tensor]:
    """``zoo.moe.apply_capacity`` of the whole batch, on this rank's tokens -> (routing, kept (P, E) slots).

    ``counts`` from ``exchange_counts(..., by_slot=True)``. Capacity = ``ceil(cf * N * K / E)`` of the batch's N
    real tokens and K slot columns. Slot (t, j) of rank r to expert e stays when its place in the batch's priority
    order, ``sum_{j' < j, all ranks} + sum_{ranks r' < r, column j} + its place among rank r's column j``, is below
    the capacity. Stats as ``apply_capacity``: ``dropped`` and ``dropped_tokens`` count this rank's tokens (so they
    add up over the ranks as summaries do), ``capacity`` is the global one.
    """
    idx, w = routing.indices, routing.weights
    P, K, E = counts.slots.shape
    T, k_local = idx.shape
    cap = expert_capacity(counts.num_tokens, K, E, capacity_factor)
    column_totals = counts.slots.sum(0)  # (K, E)
    before_column = column_totals.cumsum(0) - column_totals  # slots of earlier columns, all ranks
    before_rank = counts.slots.cumsum(0) - counts.slots  # slots of earlier ranks, same column
    start = before_column[None] + before_rank  # (P, K, E): first place of each block
    kept = (cap - start).clamp(min=0).minimum(counts.slots).sum(1)  # (P, E)
    live = _live(routing)
    column = torch.arange(k_local, device=idx.device)[:, None].expand(k_local, T)
    key = torch.where(live.t(), column * E + idx.t().clamp(min=0), K * E).reshape(-1)  # slot-major, dead last
    order = torch.argsort(key, stable=True)
    sorted_key = key[order]
    within = torch.empty_like(order)
    within[order] = torch.arange(order.numel(), device=idx.device) - torch.searchsorted(sorted_key, sorted_key)
    place = start[counts.rank].reshape(-1)[key.clamp(max=K * E - 1)] + within
    drop = ((place >= cap) & live.t().reshape(-1)).reshape(k_local, T).t()
    lost_all = live.any(1) & ~(live & ~drop).any(1)
    capacity = torch.tensor(cap, device=idx.device)
    stats = dict(routing.stats, dropped=drop.sum(), dropped_tokens=lost_all.sum(), capacity=capacity)
    dropped = replace(
        routing, indices=torch.where(drop, -1, idx), weights=torch.where(drop, torch.zeros_like(w), w), stats=stats
    )
    return dropped, kept


def _balance_columns(router: Router, routing: Routing) -> slice | None:
    """The experts the router's own balance losses cover: all of them, the dynamic group of a grouped router (None
    when it has none)."""
    if isinstance(router, GroupedRouter):
        if not (router.top_k and router.num_dynamic):
            return None
        return slice(routing.num_experts - router.num_dynamic, routing.num_experts)
    return slice(0, routing.num_experts)


def global_aux_losses(router: Router, routed: Routing, kept: Tensor, counts: GroupCounts, group) -> dict[str, Tensor]:
    """``routed.aux`` with the batch-level losses of the whole group's batch (one all-reduce).

    routed: this rank's routing after capacity; counts: the slot counts before it; kept: (P, E) slots after it.
    "load_balance" and "z" are the router's (before capacity, over the experts its balance covers, as
    ``Router.finish``), "cv_squared" and "entropy" as ``zoo.moe.LOSSES`` on the routing after capacity, "sparsity"
    as the Dirichlet router's. Other names the router or a task put in ``aux`` (e.g. "dirichlet_kl") stay this rank's.
    """
    m = routed.token_mask().to(routed.logits.dtype)
    probs = routed.router_probs()
    cols = _balance_columns(router, routed)
    parts: dict[str, Tensor] = {}
    if cols is not None:
        parts["probs"] = (probs[:, cols] * m[:, None]).sum(0)
        parts["lse2"] = (torch.logsumexp(routed.logits[:, cols].float(), dim=-1).square() * m).sum()[None]
    parts["entropy"] = (-(probs * probs.clamp_min(1e-12).log()).sum(-1) * m).sum()[None]
    parts["importance"] = (routed.dense_weights() * m[:, None]).sum(0)
    if routed.load_prob is not None:
        parts["load_prob"] = (routed.load_prob * m[:, None]).sum(0)
    if isinstance(router, DirichletRouter):
        parts["active"] = (torch.sigmoid(routed.logits).sum(-1) * m).sum()[None]
    sizes = [p.numel() for p in parts.values()]
    total = dict(zip(parts, global_sum(torch.cat([p.float() for p in parts.values()]), group).split(sizes)))
    n = m.new_tensor(float(counts.num_tokens)).clamp_min(1.0)
    aux = dict(routed.aux)
    if cols is not None:
        before = counts.expert_totals()[cols].to(m.dtype)
        f = before / before.sum().clamp_min(1.0)
        aux["load_balance"] = (cols.stop - cols.start) * (f * (total["probs"] / n)).sum()
        aux["z"] = total["lse2"][0] / n
    load = total["load_prob"] if "load_prob" in total else kept.sum(0).to(m.dtype)
    aux["cv_squared"] = _cv_squared(total["importance"]) + _cv_squared(load)
    aux["entropy"] = total["entropy"][0] / n
    if "active" in total:
        aux["sparsity"] = (total["active"][0] / n - router.target_k) ** 2 / router.num_experts
    return aux


class RouterStateSync:
    """Keeps a router's batch-driven state identical on every rank: the one-process update from the whole batch.

    dtop_p's threshold controller reads its batch's mean active experts: ``before`` keeps the state the router's
    forward starts from, ``after`` puts it back and applies the update with the group's mean (as the router would on
    the concatenated batch). Other routers pass through (sigmoid_bias's bias update all-reduces its load itself).
    """

    def __init__(self, router: Router):
        self.router = router
        self.saved: tuple[Tensor, Tensor] | None = None

    def before(self) -> None:
        r = self.router
        self.saved = (r.threshold.clone(), r.integral.clone()) if isinstance(r, DTopPRouter) and r.training else None

    @torch.no_grad()
    def after(self, counts: GroupCounts) -> None:
        if self.saved is None:
            return
        r = self.router
        r.threshold.copy_(self.saved[0])
        r.integral.copy_(self.saved[1])
        active = counts.slots.sum().to(torch.float32)  # live slots of real tokens = active experts summed
        n = counts.tokens.sum()
        r.update_threshold(active / n.clamp_min(1), apply=n > 0)
        self.saved = None
