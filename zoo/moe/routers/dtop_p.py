"""DTop-p: top-p routing with a PI-controlled threshold under a sparsity target (DTop-p, ICLR 2026 seed)."""

from __future__ import annotations

import torch
from torch import Tensor, nn

from zoo.moe.routers.base import Router
from zoo.moe.routing import Routing


class DTopPRouter(Router):
    """Each token takes experts in order of probability until their cumulative probability reaches ``p``.

    Dynamic routing normalisation: logits are standardised per token and scaled by a learned per-layer
    temperature, ``z = exp(log_temp) * (l - mean(l)) / std(l)``, so one threshold means the same in every
    layer; ``probs = softmax(z)`` (T, E). The threshold ``p`` (buffer) is driven by a PI controller toward
    ``target_k`` active experts per token on average (the sparsity budget that matches top-k FLOPs):
    ``err = target_k - mean_active``, ``integral += err``, ``p = clamp(p_init + kp * err + ki * integral)``,
    updated after each training forward. indices/weights (T, K) with K the largest count in the batch,
    -1 padded; weights are the selected probabilities renormalised.
    """

    fixed_k = False

    def __init__(
        self,
        dim: int,
        num_experts: int,
        top_k: int = 2,
        condition_dim: int = 0,
        target_k: float | None = None,
        p_init: float = 0.5,
        kp: float = 0.05,
        ki: float = 0.01,
        max_k: int | None = None,
    ):
        super().__init__(dim, num_experts, top_k, condition_dim)
        self.target_k = float(target_k or top_k)
        self.p_init, self.kp, self.ki = p_init, kp, ki
        self.max_k = max_k or num_experts
        self.log_temp = nn.Parameter(torch.zeros(()))
        self.register_buffer("threshold", torch.tensor(float(p_init)))
        self.register_buffer("integral", torch.zeros(()))

    @torch.no_grad()
    def update_threshold(self, mean_active: float | Tensor, apply: bool | Tensor = True) -> Tensor:
        """One PI step toward ``target_k`` from the batch's mean active experts; returns the threshold buffer.

        Runs on the device (no host sync) with the float64 controller arithmetic of the original float version,
        rounded to the float32 buffers at the same points. ``apply`` (bool tensor) False keeps both buffers.
        """
        mean = torch.as_tensor(mean_active, device=self.threshold.device).double()
        err = self.target_k - mean  # float64, as Python floats would be
        integral = self.integral + err.float()
        p = (self.p_init + self.kp * err).float() + self.ki * integral
        apply = torch.as_tensor(apply, device=self.threshold.device)
        self.integral.copy_(torch.where(apply, integral, self.integral))
        self.threshold.copy_(torch.where(apply, p.clamp(1e-4, 1.0), self.threshold))
        return self.threshold

    def forward(self, x: Tensor, condition: Tensor | None = None, valid: Tensor | None = None) -> Routing:
        logits = self.compute_logits(x, condition)
        z = (logits - logits.mean(-1, keepdim=True)) / logits.std(-1, keepdim=True).clamp_min(1e-6)
        probs = torch.softmax(z * self.log_temp.exp(), dim=-1)
        sorted_p, sorted_idx = probs.sort(dim=-1, descending=True)
        keep = (sorted_p.cumsum(-1) - sorted_p).detach() < self.threshold
        keep[:, 0] = True
        keep[:, self.max_k :] = False
        active = keep.sum(-1)
        K = int(active.max()) if active.numel() else 1
        indices = torch.where(keep[:, :K], sorted_idx[:, :K], -1)
        picked = torch.where(keep[:, :K], sorted_p[:, :K], 0.0)
        weights = picked / picked.sum(-1, keepdim=True).clamp_min(1e-9)
        routing = Routing(indices, weights, logits, valid, probs=probs)
        mask = routing.token_mask()
        n = mask.sum()
        mean_active = (active.float() * mask).sum() / n.clamp_min(1)  # = active[mask].float().mean(), no sync
        routing.stats["mean_active"] = mean_active.detach()
        routing.stats["threshold"] = self.threshold.detach().clone()
        if self.training:
            self.update_threshold(mean_active, apply=n > 0)
        return self.finish(routing)
