"""Segment matmul: rows sorted by expert, one matmul per expert segment against a stacked weight.

``segment_mm(x, weight, counts)`` computes ``y[s] = x[s] @ weight[e]`` for each contiguous segment ``s``
of ``counts[e]`` rows. Shapes: x (N, a), weight (E, a, b), counts list of E ints summing to N -> y (N, b).

Why a custom autograd function: slicing ``weight[e]`` inside autograd makes every slice's backward
materialise a full ``(E, a, b)`` zero gradient (O(E^2) memory traffic), and ``weight.unbind(0)`` still
copies all E gradients once more in its ``stack`` backward. Here the backward writes each expert's
gradient straight into one preallocated ``(E, a, b)`` buffer with ``out=``, and the forward writes each
segment into one preallocated output, so the only per-expert cost is the matmul itself.
On CPU the matmuls run in ``zoo.moe.segment_kernel`` (one OpenMP region per call instead of one per expert: it
holds up when other processes share the cores); elsewhere, or where the kernel cannot be built, in the Python loop
below, which is also the reference the kernel is tested against. ``torch._grouped_mm`` was measured no faster
than the loop on CPU in torch 2.14 (see leaderboard/moe_layer.md).

The loop also runs while a Python dispatch mode is active or a tensor is a Python subclass that dispatches
(``torch.utils.flop_counter.FlopCounterMode``, Lightning's ``measure_flops``, ``FakeTensor``): the kernel's GEMMs run
on OpenMP workers, which would have to re-enter Python while this thread holds the interpreter lock; with two or
more threads they waited on it for ever.
"""

from __future__ import annotations

from itertools import accumulate

import torch
from torch import Tensor

from zoo.moe import segment_kernel


def _segments(counts: list[int]):
    start = 0
    for e, n in enumerate(counts):
        if n:
            yield e, start, start + n
        start += n


def _loop_mm(out: Tensor, x: Tensor, weight: Tensor, bias: Tensor | None, counts: list[int], transpose: bool):
    """The reference: out[s:t] = x[s:t] @ weight[e] (or weight[e]^T) [+ bias[e]], one matmul per segment."""
    for e, s, t in _segments(counts):
        w = weight[e].t() if transpose else weight[e]
        if bias is None:
            torch.mm(x[s:t], w, out=out[s:t])
        else:
            torch.addmm(bias[e], x[s:t], w, out=out[s:t])


def _loop_wgrad(gw: Tensor, x: Tensor, grad: Tensor, counts: list[int]):
    """The reference weight gradient: gw[e] = x[s:t]^T @ grad[s:t]; experts without rows get exact zeros."""
    for e, s, t in _segments(counts):
        torch.mm(x[s:t].t(), grad[s:t], out=gw[e])
    empty = [e for e, n in enumerate(counts) if n == 0]
    if empty:
        gw[empty] = 0


def _python_dispatch(*tensors: Tensor | None) -> bool:
    """Whether ATen calls on ``tensors`` would call into Python: a dispatch mode is active, or one of them is a
    subclass with its own ``__torch_dispatch__`` (see the module doc)."""
    if torch._C._len_torch_dispatch_stack():
        return True
    plain = torch.Tensor.__torch_dispatch__
    return any(t is not None and type(t).__torch_dispatch__ is not plain for t in tensors)


def _empty_weight_grad(ext, weight: Tensor) -> Tensor:
    """An uninitialised (E, a, b) weight gradient; on the kernel path, from its cache of large blocks
    (``segment_kernel.pool_stats``). Only weight gradients are cached: activations and input gradients die inside
    the step, and caching them would hold their blocks while the weight gradients are mapped (a higher peak)."""
    if ext is not None and segment_kernel.pooling():
        return ext.pooled_empty(list(weight.shape), weight)
    return torch.empty_like(weight)


class _SegmentMM(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: Tensor, weight: Tensor, bias: Tensor | None, counts: list[int]) -> Tensor:
        on_cpu = x.device.type == "cpu" and not _python_dispatch(x, weight, bias)
        ext = segment_kernel.kernel() if on_cpu else None
        out = x.new_empty(x.shape[0], weight.shape[2])
        offsets = [0, *accumulate(counts)]
        if ext is not None:
            ext.segment_mm_out(out, x, weight, bias, offsets, False)
        else:
            _loop_mm(out, x, weight, bias, counts, transpose=False)
        ctx.save_for_backward(x, weight)
        ctx.counts, ctx.offsets, ctx.ext = counts, offsets, ext  # the backward runs the forward's path
        ctx.has_bias = bias is not None
        return out

    @staticmethod
    def backward(ctx, grad: Tensor):
        x, weight = ctx.saved_tensors
        grad = grad.contiguous()
        counts = ctx.counts
        ext, offsets = ctx.ext, ctx.offsets
        gx = torch.empty_like(x) if ctx.needs_input_grad[0] else None
        gw = _empty_weight_grad(ext, weight) if ctx.needs_input_grad[1] else None
        gb = None
        if ctx.has_bias and ctx.needs_input_grad[2]:  # one op for all experts (faster than segment_reduce)
            rows = torch.repeat_interleave(torch.arange(len(counts)), torch.tensor(counts)).to(grad.device)
            gb = grad.new_zeros(weight.shape[0], weight.shape[2]).index_add_(0, rows, grad)
        if gx is not None:
            if ext is not None:
                ext.segment_mm_out(gx, grad, weight, None, offsets, True)
            else:
                _loop_mm(gx, grad, weight, None, counts, transpose=True)
        if gw is not None:
            if ext is not None:
                ext.segment_wgrad_out(gw, x, grad, offsets)
            else:
                _loop_wgrad(gw, x, grad, counts)
        return gx, gw, gb, None


def segment_mm(x: Tensor, weight: Tensor, counts: list[int], bias: Tensor | None = None) -> Tensor:
    """(N, a) rows sorted by expert, (E, a, b) weight, E segment lengths [, (E, b) bias] -> (N, b)."""
    if x.shape[0] == 0:
        return x.new_zeros(0, weight.shape[2])
    if weight.dtype != x.dtype:
        x = x.to(weight.dtype)
    return _SegmentMM.apply(x.contiguous(), weight, bias, list(counts))
