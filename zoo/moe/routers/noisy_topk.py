"""Noisy top-k gating (Shazeer et al. 2017, "Outrageously Large Neural Networks")."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from zoo.moe.routers.base import Router
from zoo.moe.routing import Routing


class NoisyTopKRouter(Router):
    """``H = x Wg + N(0,1) * (softplus(x Wnoise) + eps)`` (noise only in training); softmax over top-k of H.

    Shapes: logits (T, E) are the clean ``x Wg``; indices/weights (T, k). ``load_prob`` (T, E) is the paper's
    smooth load estimator ``P(x, i) = Phi((clean_i - kth_excluding_i) / noise_std_i)``, the probability that
    expert i stays in the top-k under a fresh noise draw; ``cv_squared_loss`` uses it for the load term.
    Both gate matrices start at zero as in the paper.
    """

    def __init__(self, dim: int, num_experts: int, top_k: int = 2, condition_dim: int = 0, noise_eps: float = 1e-2):
        super().__init__(dim, num_experts, top_k, condition_dim)
        self.noise = nn.Linear(dim + condition_dim, num_experts, bias=False)
        nn.init.zeros_(self.gate.weight)
        nn.init.zeros_(self.noise.weight)
        self.noise_eps = noise_eps

    def forward(self, x: Tensor, condition: Tensor | None = None, valid: Tensor | None = None) -> Routing:
        h = self.router_input(x, condition)
        clean = self.gate(h).float()
        k = min(self.top_k, self.num_experts)
        if not self.training:
            vals, indices = clean.topk(k, dim=-1)
            return self.finish(Routing(indices, torch.softmax(vals, -1), clean, valid))
        std = F.softplus(self.noise(h).float()) + self.noise_eps
        noisy = clean + torch.randn_like(clean) * std
        top_vals, top_idx = noisy.topk(min(k + 1, self.num_experts), dim=-1)
        vals, indices = top_vals[:, :k], top_idx[:, :k]
        load_prob = None
        if k < self.num_experts:
            # threshold for expert i: the k-th largest noisy value among the others
            in_top = noisy >= top_vals[:, k - 1 : k]
            thresh = torch.where(in_top, top_vals[:, k : k + 1], top_vals[:, k - 1 : k])
            load_prob = torch.distributions.Normal(0.0, 1.0).cdf((clean - thresh) / std)
        return self.finish(Routing(indices, torch.softmax(vals, -1), clean, valid, load_prob=load_prob))
