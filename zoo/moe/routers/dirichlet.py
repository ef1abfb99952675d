"""Dirichlet-routed MoE (DirMoE, ICLR 2026 seed abstract): Bernoulli selection x Dirichlet contribution."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from zoo.moe.routers.base import Router
from zoo.moe.routing import Routing


class DirichletRouter(Router):
    """Separates *which* experts (Bernoulli) from *how much* each contributes (Dirichlet).

    Selection: logits ``l = x W`` (T, E); in training a Gumbel-sigmoid (binary concrete) relaxation
    ``z = sigmoid((l + log u - log(1 - u)) / tau)``, hard ``z > 0.5`` forward with a straight-through
    gradient; in eval ``l > 0``. At least the arg-max expert is always selected.
    Contribution: concentrations ``alpha = softplus(x Wa) + 1e-3`` (T, E); in training
    ``theta ~ Dirichlet(alpha).rsample()`` (implicit reparameterisation), in eval the mean ``alpha / sum``.
    Combine weights over the selected set: ``w = z * theta / sum(z_hard * theta)``, indices/weights (T, K)
    with K the largest selected count, -1 padded.
    Aux (the ELBO's regularisers): ``sparsity = (mean_t sum_e sigmoid(l) - target_k)^2 / E`` pins the
    expected number of active experts; ``dirichlet_kl`` = KL(Dir(alpha) || Dir(prior_concentration)).
    ``tau`` is a plain attribute so a schedule (exploratory -> definitive) can anneal it.
    """

    fixed_k = False

    def __init__(
        self,
        dim: int,
        num_experts: int,
        top_k: int = 2,
        condition_dim: int = 0,
        tau: float = 1.0,
        target_k: float | None = None,
        prior_concentration: float = 1.0,
    ):
        super().__init__(dim, num_experts, top_k, condition_dim)
        self.concentration = nn.Linear(dim + condition_dim, num_experts, bias=False)
        self.tau, self.target_k, self.prior_concentration = tau, float(target_k or top_k), prior_concentration

    def forward(self, x: Tensor, condition: Tensor | None = None, valid: Tensor | None = None) -> Routing:
        h = self.router_input(x, condition)
        logits = self.gate(h).float()
        alpha = F.softplus(self.concentration(h).float()) + 1e-3
        if self.training:
            u = torch.rand_like(logits).clamp(1e-6, 1 - 1e-6)
            z_soft = torch.sigmoid((logits + u.log() - (-u).log1p()) / self.tau)
            theta = torch.distributions.Dirichlet(alpha).rsample()
        else:
            z_soft = torch.sigmoid(logits)
            theta = alpha / alpha.sum(-1, keepdim=True)
        z_hard = (z_soft > 0.5).float()
        z_hard.scatter_(1, logits.argmax(-1, keepdim=True), 1.0)
        z = z_hard + z_soft - z_soft.detach()
        dense = z * theta / (z_hard * theta).sum(-1, keepdim=True).detach().clamp_min(1e-9)
        sel = z_hard.bool()
        K = int(sel.sum(-1).max())
        order = torch.argsort(sel.to(torch.int8), dim=-1, descending=True, stable=True)[:, :K]
        keep = sel.gather(1, order)
        indices = torch.where(keep, order, -1)
        weights = torch.where(keep, dense.gather(1, order), 0.0)
        select_p = torch.sigmoid(logits)
        routing = Routing(indices, weights, logits, valid, probs=select_p / select_p.sum(-1, keepdim=True))
        mask = routing.token_mask().float()
        n = mask.sum().clamp_min(1.0)
        expected_active = (select_p.sum(-1) * mask).sum() / n
        routing.aux["sparsity"] = (expected_active - self.target_k) ** 2 / self.num_experts
        prior = torch.distributions.Dirichlet(torch.full_like(alpha, self.prior_concentration))
        kl = torch.distributions.kl_divergence(torch.distributions.Dirichlet(alpha), prior)
        routing.aux["dirichlet_kl"] = (kl * mask).sum() / n
        routing.stats["mean_active"] = ((sel.sum(-1).float() * mask).sum() / n).detach()
        return self.finish(routing)
