"""MoE-GS gate-aware Gaussian pruning: drop the Gaussians the per-pixel gate depends on least.

Score of Gaussian i of expert k: ``s_i = sum_views |d (sum_u G'_k(u)) / d w_i|`` -- how much the expert's per-pixel
gate mass moves with that Gaussian's splatted volume weight (a Gaussian that covers no pixel, or only pixels where
the gate is saturated, scores 0). Pruning keeps the top ``fraction`` of each expert's Gaussians by score (the rest
get opacity 0, so the rasteriser skips them) and reports the blend's PSNR on held-out views per kept fraction.
Needs a router with splatted weights (``router_mode`` ``volume_pixel`` or ``volume``).
"""

from __future__ import annotations

import torch
from torch import Tensor

from zoo.errors import ConfigError
from zoo_tasks.splatting.objective import image_metrics


def gate_sensitivity(moe, views: list[dict]) -> list[Tensor]:
    """Per expert, (N_k,) accumulated |d sum_u G'_k(u) / d w_i| over ``views`` (unbatched)."""
    if not moe.router.needs_splat:
        raise ConfigError("prune_fractions: pruning needs splatted weights (router_mode: volume_pixel or volume)")
    params = list(moe.router.gauss_weights)
    scores = [torch.zeros(len(p)) for p in params]
    for view in views:
        _, _, routing = moe.blend(view)
        weights = routing.dense_weights()
        for k, p in enumerate(params):
            (grad,) = torch.autograd.grad(weights[:, k].sum(), p, retain_graph=k < len(params) - 1)
            scores[k] += grad[:, 0].abs().detach().cpu()
    return scores


def keep_mask(score: Tensor, fraction: float) -> Tensor:
    """(N,) bool: the ``ceil(fraction N)`` highest scores (ties broken by index)."""
    keep = max(1, int(torch.ceil(torch.tensor(fraction * len(score))).item()))
    mask = torch.zeros(len(score), dtype=torch.bool)
    mask[torch.argsort(score, descending=True, stable=True)[:keep]] = True
    return mask


@torch.no_grad()
def blend_psnr(moe, views: list[dict]) -> float:
    return sum(image_metrics(moe.blend(v)[0], v["image"])["psnr"].item() for v in views) / len(views)


def prune_curve(moe, score_views: list[dict], test_views: list[dict], fractions: list[float]) -> dict[str, float]:
    """PSNR of the blend on ``test_views`` with each expert pruned to each kept fraction; restores the experts."""
    scores = gate_sensitivity(moe, score_views)
    curve = {}
    for fraction in fractions:
        saved = [e.gaussians.opacity_logits.detach().clone() for e in moe.experts]
        for expert, score in zip(moe.experts, scores, strict=True):
            logits = expert.gaussians.opacity_logits
            logits.data[~keep_mask(score, fraction).to(logits.device)] = -1e4  # opacity 0: skipped
        curve[f"{fraction:g}"] = blend_psnr(moe, test_views)
        for expert, logits in zip(moe.experts, saved, strict=True):
            expert.gaussians.opacity_logits.data.copy_(logits)
    return curve
