"""Comparing gradients and one optimiser step with an upstream fixture, where some entries vanish by symmetry.

Some gradients are 0 exactly by symmetry: a softmax is unchanged by adding the same number to all its inputs (an
attention key bias, ABMIL's attention-score bias), and a BatchNorm in training mode subtracts any per-feature
constant (the bias of a layer right before it; an attention value bias, whose softmax-weighted sum is that same
constant). Computed, such a gradient is rounding noise on both sides, and Adam's first step turns it into
lr x sign(noise). Those entries are
compared with the model's largest gradient as scale (both must be 0 at fp32 rounding) and left out of the step;
every other entry is compared relative to its own tensor."""

from __future__ import annotations

import torch


def compare_gradients_and_step(
    parity,
    params: dict[str, torch.nn.Parameter],
    optimizer: torch.optim.Optimizer,
    grads: dict[str, torch.Tensor],
    after_step: dict[str, torch.Tensor],
    symmetric_zero: dict[str, slice] | None = None,
    tolerance: dict[str, float] | None = None,
) -> None:
    """After ``loss.backward()`` on ours: compare every gradient with ``grads`` (theirs, under our names), take
    ``optimizer.step()`` and compare the parameters with ``after_step``. ``symmetric_zero``: {name: slice of the
    flattened tensor} of entries that vanish by symmetry; ``tolerance``: per-name tolerances (default 1e-5)."""
    zero, tol = symmetric_zero or {}, tolerance or {}
    assert grads.keys() == {n for n, p in params.items() if p.requires_grad}
    largest = max(float(g.abs().max()) for g in grads.values())
    keep = {}
    for name, theirs in grads.items():
        ours = params[name].grad.reshape(-1)
        mask = torch.ones(theirs.numel(), dtype=torch.bool)
        if name in zero:
            mask[zero[name]] = False
            sl = zero[name]
            parity.compare(f"grad/{name}[{sl.start}:{sl.stop}] (0 by symmetry)", ours[sl], theirs.reshape(-1)[sl],
                           scale=largest)  # fmt: skip
        keep[name] = mask
        if mask.any():
            parity.compare(f"grad/{name}", ours[mask], theirs.reshape(-1)[mask], tolerance=tol.get(name, 1e-5))
    optimizer.step()
    for name, theirs in after_step.items():
        mask = keep.get(name, torch.ones(theirs.numel(), dtype=torch.bool))
        if mask.any():
            parity.compare(f"after_step/{name}", params[name].reshape(-1)[mask], theirs.reshape(-1)[mask])
