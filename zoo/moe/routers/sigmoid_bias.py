"""Sigmoid top-k with auxiliary-loss-free bias balancing (DeepSeek-V3, 2024; Wang et al. 2024)."""

from __future__ import annotations

import torch
import torch.distributed as dist
from torch import Tensor

from zoo.moe.routers.base import Router
from zoo.moe.routing import Routing


class SigmoidBiasRouter(Router):
    """Affinity ``s = sigmoid(x W)`` (T, E); select top-k of ``s + b``; combine with ``s`` only.

    The per-expert bias ``b`` (buffer, (E,)) changes which experts are selected, never the combine weights:
    weights (T, k) = selected ``s`` renormalised to sum to 1, times ``route_scale``. After each step the
    bias moves toward balance: ``b += u * sign(mean_load - load)`` with ``u = bias_update_rate``, so
    overloaded experts become less attractive. Training forwards accumulate the load; ``update_bias()``
    applies the rule (called automatically after every training forward when ``auto_update``; set it
    False to update once per optimiser step, e.g. from a callback under gradient accumulation).

    Data parallel: when ``torch.distributed`` is initialised with more than one process, ``update_bias()``
    all-reduces (sums) the accumulated load over the processes first, so every replica applies the same
    update from the global batch's load and the biases stay identical (as with one process on the whole
    batch). Every process must therefore run the same number of training forwards (as DDP requires anyway).
    """

    def __init__(
        self,
        dim: int,
        num_experts: int,
        top_k: int = 2,
        condition_dim: int = 0,
        bias_update_rate: float = 1e-3,
        auto_update: bool = True,
        route_scale: float = 1.0,
    ):
        super().__init__(dim, num_experts, top_k, condition_dim)
        self.bias_update_rate, self.auto_update, self.route_scale = bias_update_rate, auto_update, route_scale
        self.register_buffer("expert_bias", torch.zeros(num_experts))
        self.register_buffer("pending_load", torch.zeros(num_experts), persistent=False)

    @torch.no_grad()
    def update_bias(self, load: Tensor | None = None) -> Tensor:
        """Apply ``b += u * sign(mean(load) - load)`` with the given (E,) load or the accumulated one.

        The accumulated load is summed over data-parallel processes first; a given ``load`` is used as is.
        An all-zero load changes nothing (``sign(0) = 0``), so no host-side check is needed.
        """
        if load is None:
            load = self.pending_load
            if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
                dist.all_reduce(load)
        else:
            load = load.to(self.expert_bias)
        self.expert_bias += self.bias_update_rate * torch.sign(load.mean() - load)
        self.pending_load.zero_()
        return self.expert_bias

    def forward(self, x: Tensor, condition: Tensor | None = None, valid: Tensor | None = None) -> Routing:
        logits = self.compute_logits(x, condition)
        scores = torch.sigmoid(logits)
        k = min(self.top_k, self.num_experts)
        indices = (scores.detach() + self.expert_bias).topk(k, dim=-1).indices
        picked = scores.gather(1, indices)
        weights = self.route_scale * picked / picked.sum(-1, keepdim=True).clamp_min(1e-9)
        routing = Routing(indices, weights, logits, valid, probs=scores / scores.sum(-1, keepdim=True))
        if self.training:
            with torch.no_grad():
                self.pending_load += routing.expert_counts().float()
            if self.auto_update:
                self.update_bias()
        return self.finish(routing)
