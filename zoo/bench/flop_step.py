"""The floating-point work of one training step: ``torch.utils.flop_counter.FlopCounterMode`` around it.

What is counted is what PyTorch's FLOP counter has formulas for: matrix products (``mm``, ``addmm``, ``bmm``,
``baddbmm``, einsums that lower to them), convolutions and attention, forward and backward, each multiply-add as two
FLOPs; element-wise work (activations, norms, gathers, scatters, the optimiser's update) is not counted. The step runs
``zoo.moe``'s experts on the Python loop of ``zoo.moe.segment_mm`` (``segment_kernel.forced_off``): the same GEMMs as
the C++ kernel, issued as ATen calls the counter sees (the kernel's GEMMs run on OpenMP workers, which would have to
re-enter the Python counter and cannot). Environment simulation (MuJoCo) is not counted either.
"""

from __future__ import annotations

from torch import nn


class CountedStep:
    """One training step of ``model`` under the FLOP counter: ``start()`` before it, ``stop()`` after it returns
    ``{"flops": total}`` (see the module doc for what is counted)."""

    def __init__(self, model: nn.Module) -> None:
        self.model = model

    def start(self) -> None:
        from torch.utils.flop_counter import FlopCounterMode

        from zoo.moe import segment_kernel

        self.kernel_off = segment_kernel.forced_off()
        self.kernel_off.__enter__()
        self.counter = FlopCounterMode(display=False)
        self.counter.__enter__()

    def stop(self) -> dict:
        self.counter.__exit__(None, None, None)
        self.kernel_off.__exit__(None, None, None)
        return {"flops": int(self.counter.get_total_flops())}
