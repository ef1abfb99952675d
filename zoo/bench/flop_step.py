"""The floating-point work of one training step: PyTorch's FLOP formulas applied to every ATen call in it.

What is counted is what PyTorch's FLOP counter (``torch.utils.flop_counter``) has formulas for: matrix products
(``mm``, ``addmm``, ``bmm``, ``baddbmm``, einsums that lower to them), convolutions and attention, forward and
backward, each multiply-add as two FLOPs; element-wise work (activations, norms, gathers, scatters, the optimiser's
update) is not counted. Every ATen call is counted too (``calls``, with or without a formula): how many separate
operations the step issues, each of which pays a fixed cost (dispatch, allocation, a parallel region) whatever its
size. The step runs ``zoo.moe``'s experts on the Python loop of ``zoo.moe.segment_mm``
(``segment_kernel.forced_off``): the same GEMMs as the C++ kernel, issued as ATen calls the counter sees (the kernel's
GEMMs run on OpenMP workers, which would have to re-enter the Python counter and cannot). Environment simulation
(MuJoCo) is not counted either. So ``calls`` counts each expert segment's GEMM as one call, as the loop issues them;
the kernel issues the same GEMMs, one per segment piece, without the dispatcher.

Why not ``FlopCounterMode`` itself: it tracks modules with backward hooks that ``torch.autograd.grad`` on leaf
parameters refuses (SPHERE's PPO update takes its gradients that way), and the per-module split is not needed here;
``_Counter`` applies the same formulas (``flop_registry``) without the tracker.
"""

from __future__ import annotations

from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import flop_registry


class _Counter(TorchDispatchMode):
    """Sums ``flop_registry``'s formula of every ATen call that has one (as ``FlopCounterMode`` does), and counts the
    calls."""

    def __init__(self) -> None:
        super().__init__()
        self.total = 0
        self.calls = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        self.calls += 1
        formula = flop_registry.get(func._overloadpacket)
        if formula is not None:
            self.total += formula(*args, **kwargs, out_val=out)
        return out


class CountedStep:
    """One training step of ``model`` under the FLOP counter: ``start()`` before it, ``stop()`` after it returns
    ``{"flops": total, "calls": ATen calls}`` (see the module doc for what is counted)."""

    def __init__(self, model: nn.Module) -> None:
        self.model = model

    def start(self) -> None:
        from zoo.moe import segment_kernel

        self.kernel_off = segment_kernel.forced_off()
        self.kernel_off.__enter__()
        self.counter = _Counter()
        self.counter.__enter__()

    def stop(self) -> dict:
        self.counter.__exit__(None, None, None)
        self.kernel_off.__exit__(None, None, None)
        return {"flops": int(self.counter.total), "calls": self.counter.calls}
