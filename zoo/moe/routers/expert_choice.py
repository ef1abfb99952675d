"""Expert-choice routing (Zhou et al. 2022, "Mixture-of-Experts with Expert Choice Routing")."""

from __future__ import annotations

import math

import torch
from torch import Tensor

from zoo.moe.routers.base import Router
from zoo.moe.routing import Routing


class ExpertChoiceRouter(Router):
    """Each expert picks its top-C tokens instead of each token picking experts.

    ``S = softmax(x W)`` over experts (T, E); expert e takes the C tokens with largest ``S[:, e]`` where
    ``C = ceil(T_valid * capacity_factor / E)`` (``capacity_factor`` defaults to ``top_k``, so on average
    each token gets k experts; some get none, some more). Combine weight = ``S[t, e]``. Returned in
    token-major form: indices/weights (T, K) with K the largest number of experts any token got, -1 padded.
    Padding tokens are never picked. Note: needs the whole batch, so it is not causal.
    """

    per_token_choice = False
    fixed_k = False
    convex_weights = False  # a token's weights: the probabilities of the experts that picked it (0 to 1)

    def __init__(
        self,
        dim: int,
        num_experts: int,
        top_k: int = 2,
        condition_dim: int = 0,
        capacity_factor: float | None = None,
    ):
        super().__init__(dim, num_experts, top_k, condition_dim)
        self.capacity_factor = float(capacity_factor or top_k)

    def capacity(self, num_valid: int) -> int:
        return min(num_valid, max(1, math.ceil(num_valid * self.capacity_factor / self.num_experts)))

    def forward(self, x: Tensor, condition: Tensor | None = None, valid: Tensor | None = None) -> Routing:
        logits = self.compute_logits(x, condition)
        probs = torch.softmax(logits, dim=-1)
        T, E = probs.shape
        mask = torch.ones(T, dtype=torch.bool, device=x.device) if valid is None else valid.reshape(-1).bool()
        n_valid = int(mask.sum())
        cap = self.capacity(n_valid) if n_valid else 0
        if cap == 0:
            empty = torch.full((T, 1), -1, dtype=torch.long, device=x.device)
            return self.finish(Routing(empty, probs.new_zeros(T, 1), logits, valid, probs=probs))
        score = torch.where(mask[:, None], probs.detach(), -1.0)
        token_ids = score.t().topk(cap, dim=-1).indices  # (E, C)
        expert_ids = torch.arange(E, device=x.device)[:, None].expand(E, cap)
        tok, exp = token_ids.reshape(-1), expert_ids.reshape(-1)
        order = torch.argsort(tok, stable=True)
        tok, exp = tok[order], exp[order]
        per_token = torch.bincount(tok, minlength=T)
        K = int(per_token.max())
        slot = torch.arange(tok.numel(), device=x.device) - (torch.cumsum(per_token, 0) - per_token)[tok]
        indices = torch.full((T, K), -1, dtype=torch.long, device=x.device)
        indices[tok, slot] = exp
        weights = torch.where(indices >= 0, probs.gather(1, indices.clamp(min=0)), 0.0)
        routing = Routing(indices, weights, logits, valid, probs=probs)
        routing.stats["capacity"] = cap
        routing.stats["tokens_without_expert"] = ((per_token == 0) & mask).sum()
        return self.finish(routing)
