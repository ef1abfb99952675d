"""Softmax top-k router (GShard, Lepikhin et al. 2020; Switch Transformer, Fedus et al. 2021)."""

from __future__ import annotations

import torch
from torch import Tensor

from zoo.moe.routers.base import Router
from zoo.moe.routing import Routing


class TopKRouter(Router):
    """Softmax over all E logits, keep the k largest probabilities.

    ``p = softmax(x W)`` (T, E); indices = top-k of p (T, k); weights = the k probabilities, renormalised
    to sum to 1 when ``normalize`` (GShard top-2, Mixtral) or raw (Switch top-1 style, ``normalize=False``).
    """

    def __init__(self, dim: int, num_experts: int, top_k: int = 2, condition_dim: int = 0, normalize: bool = True):
        super().__init__(dim, num_experts, top_k, condition_dim)
        self.normalize = normalize

    def forward(self, x: Tensor, condition: Tensor | None = None, valid: Tensor | None = None) -> Routing:
        logits = self.compute_logits(x, condition)
        probs = torch.softmax(logits, dim=-1)
        weights, indices = probs.topk(min(self.top_k, self.num_experts), dim=-1)
        if self.normalize:
            weights = weights / weights.sum(-1, keepdim=True).clamp_min(1e-9)
        return self.finish(Routing(indices, weights, logits, valid, probs=probs))
