"""KERN router: Kernel Inspired Router with Normalisation (ICLR 2026 seed abstract)."""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor

from zoo.moe.routers.base import Router
from zoo.moe.routing import Routing


class KernRouter(Router):
    """FFN-style router function: ``s = ReLU(x W)`` (T, E), select top-k of s, weights = l2-normalised s.

    Reading MoE as Nadaraya-Watson regression, softmax is just one kernel normaliser; KERN replaces it with
    the recommended ReLU activation and l2 normalisation over the selected scores:
    ``w = s_topk / ||s_topk||_2`` (T, k). A token whose scores are all zero gets zero weights (no output).
    """

    convex_weights = False  # l2-normalised: a token's weights sum to 1..sqrt(k), or 0

    def forward(self, x: Tensor, condition: Tensor | None = None, valid: Tensor | None = None) -> Routing:
        logits = self.compute_logits(x, condition)
        scores = F.relu(logits)
        # select on logits so ties among zero scores still pick a deterministic, meaningful order
        indices = logits.topk(min(self.top_k, self.num_experts), dim=-1).indices
        weights = F.normalize(scores.gather(1, indices), p=2.0, dim=-1, eps=1e-9)
        probs = scores / scores.sum(-1, keepdim=True).clamp_min(1e-9)
        return self.finish(Routing(indices, weights, logits, valid, probs=probs))
