"""Dense soft gating (Jacobs et al. 1991, "Adaptive Mixtures of Local Experts")."""

from __future__ import annotations

import torch
from torch import Tensor

from zoo.moe.routers.base import Router
from zoo.moe.routing import Routing


class SoftRouter(Router):
    """Every token uses every expert: weights = ``softmax(x W)`` (T, E), indices = ``arange(E)`` (T, E).

    Meant for small heterogeneous expert sets (a GNN per hop, a policy per skill) where all experts run
    anyway; ``top_k`` is ignored.
    """

    sparse = False

    def forward(self, x: Tensor, condition: Tensor | None = None, valid: Tensor | None = None) -> Routing:
        logits = self.compute_logits(x, condition)
        probs = torch.softmax(logits, dim=-1)
        indices = torch.arange(self.num_experts, device=x.device).expand(x.shape[0], -1)
        return self.finish(Routing(indices, probs, logits, valid, probs=probs))
