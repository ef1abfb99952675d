"""The collectives of the expert-parallel layer, with the gradients it needs (``torch.distributed``, any backend).

- ``all_to_all(x, send_splits, recv_splits, group)``: rows (N, *F) go to the group's ranks in order, ``send_splits[q]``
  rows to rank q; the rows from each rank arrive in rank order -> (sum(recv_splits), *F). Differentiable.
- ``global_sum(local, group)``: the sum over the group of a per-rank tensor, for losses of global statistics.
- ``gather_from_group(t, group)``: every rank's ``t`` (equal shapes), stacked -> (P, *t.shape). No gradient.

A group of one rank makes each of them a copy (no communication).
"""

from __future__ import annotations

import torch
import torch.distributed as dist
from torch import Tensor


def group_size(group) -> int:
    """Ranks in ``group`` (None: the default group)."""
    return dist.get_world_size(group)


class _AllToAll(torch.autograd.Function):
    """Rows exchanged across ranks; the backward sends each row's gradient back where the row came from.

    Our own Function rather than ``torch.distributed.nn.functional.all_to_all_single``: that one runs with gloo
    between CPU processes in torch 2.14, but is deprecated there in favour of the private
    ``torch.distributed._functional_collectives``; this one depends on neither and is the whole of what we need.
    """

    @staticmethod
    def forward(ctx, x: Tensor, send_splits: list[int], recv_splits: list[int], group) -> Tensor:
        ctx.send_splits, ctx.recv_splits, ctx.group = send_splits, recv_splits, group
        out = x.new_empty(sum(recv_splits), *x.shape[1:])
        dist.all_to_all_single(out, x.contiguous(), recv_splits, send_splits, group=group)
        return out

    @staticmethod
    def backward(ctx, grad: Tensor):
        grad_x = grad.new_empty(sum(ctx.send_splits), *grad.shape[1:])
        dist.all_to_all_single(grad_x, grad.contiguous(), ctx.send_splits, ctx.recv_splits, group=ctx.group)
        return grad_x, None, None, None


def all_to_all(x: Tensor, send_splits: list[int], recv_splits: list[int], group, join_backward: bool) -> Tensor:
    """(N, *F) rows, N = sum(send_splits) -> (sum(recv_splits), *F), differentiable.

    ``join_backward``: the exchange's backward is a collective too, so when any rank will backpropagate through it
    every rank must; True makes this rank's output ask for a gradient even where its input does not (a rank that
    sent or received no rows). Pass the same value on every rank.
    """
    if group_size(group) == 1:
        return x
    if join_backward and not x.requires_grad:
        x = x.detach().requires_grad_()
    return _AllToAll.apply(x, list(send_splits), list(recv_splits), group)


def global_sum(local: Tensor, group) -> Tensor:
    """The sum over ``group`` of every rank's ``local`` (any shape); its gradient is P = group size times that of
    ``local``.

    For a loss ``f`` of global sums that every rank computes alike and backpropagates: the mean over the ranks of
    their gradients, P * mean_r df/dS * dS_r = df/dS * dS, is the gradient of the one-process loss. No collective runs
    in the backward. The value is the all-reduced sum itself (``total + (x - x)``, exact).
    """
    total = local.detach().clone()
    size = group_size(group)
    if size > 1:
        dist.all_reduce(total, group=group)
    if not local.requires_grad:
        return total
    scaled = local * size
    return total + (scaled - scaled.detach())


def gather_from_group(t: Tensor, group) -> Tensor:
    """(*S) on every rank (same shape and dtype) -> (P, *S), rank q's tensor at [q]. No gradient."""
    t = t.detach().contiguous()
    if group_size(group) == 1:
        return t[None].clone()
    parts = [torch.empty_like(t) for _ in range(group_size(group))]
    dist.all_gather(parts, t, group=group)
    return torch.stack(parts)
