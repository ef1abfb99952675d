"""DyGMoCE's ranking constraint on routing over curvature-ordered experts (our reading of the abstract).

Experts sorted by their current (learned) curvature, a token's routing probabilities should be unimodal: they
fall off on both sides of the token's top expert, so neighbouring curvatures get neighbouring weight. The
penalty is a hinge on every step that rises away from the peak::

    p' = p[:, argsort(κ)]          (T, E)   probabilities in curvature order
    e* = argmax_e p'_e
    L  = mean_t [ Σ_{e >= e*} relu(p'_{e+1} - p'_e) + Σ_{e < e*} relu(p'_e - p'_{e+1}) ]

L = 0 exactly when every token's weights are unimodal in curvature order (``test_dygmoce_ranking.py``).
"""

from __future__ import annotations

import torch
from torch import Tensor


def ranking_violation(probs: Tensor, curvatures: Tensor, valid: Tensor | None = None) -> Tensor:
    """probs (T, E), curvatures (E,), valid (T,) bool or None -> scalar hinge penalty (see the module docstring)."""
    penalty = ranking_violation_per_token(probs, curvatures)
    if valid is not None:
        penalty = penalty[valid.reshape(-1).bool()]
    return penalty.mean() if penalty.numel() else probs.sum() * 0.0


def is_unimodal(probs: Tensor, curvatures: Tensor, tol: float = 1e-6) -> Tensor:
    """(T,) bool: each token's weights are unimodal over experts in curvature order."""
    return ranking_violation_per_token(probs, curvatures) <= tol


def ranking_violation_per_token(probs: Tensor, curvatures: Tensor) -> Tensor:
    """(T,) hinge penalty per token."""
    ordered = probs[:, torch.argsort(curvatures.detach())]
    steps = ordered[:, 1:] - ordered[:, :-1]  # (T, E-1): step e goes from expert e to e+1
    peak = ordered.argmax(dim=1, keepdim=True)
    index = torch.arange(steps.shape[1], device=probs.device).unsqueeze(0)
    # steps right of the peak must not rise, steps left of it must not fall
    return torch.where(index >= peak, steps.clamp_min(0), (-steps).clamp_min(0)).sum(dim=1)
