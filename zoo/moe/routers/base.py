"""Router base class: a linear gate over the token, optionally joined with a condition vector."""

from __future__ import annotations

import torch
from torch import Tensor, nn

from zoo.moe.routing import Routing


def broadcast_condition(condition: Tensor, lead_shape: tuple[int, ...]) -> Tensor:
    """Broadcast a condition (c,), (B, c) or (..., c) onto tokens shaped lead_shape -> (prod(lead), c).

    Missing middle axes are inserted after the leading ones, so a per-sample (B, c) condition applies to
    every position of a (B, S, d) input.
    """
    while condition.dim() < len(lead_shape) + 1:
        condition = condition.unsqueeze(-2) if condition.dim() > 1 else condition.unsqueeze(0)
    return condition.expand(*lead_shape, condition.shape[-1]).reshape(-1, condition.shape[-1])


class Router(nn.Module):
    """Shared parts of every router: ``gate = Linear(dim + condition_dim, E, bias=False)``.

    Call: ``router(x (T, dim), condition=None ((T, c) or (c,)), valid=None ((T,) bool)) -> Routing``.
    Conditioned routing (task id, domain prompt, timestep embedding) concatenates the condition to the
    router input when ``condition_dim > 0``; a router built with ``condition_dim == 0`` ignores it.

    Capabilities (class attributes, see ``zoo.moe.routers.CAPABILITIES`` and ``zoo.moe.require_router``), which
    tell a mixture whether this router applies to it; a plugin's router (``zoo.routers`` entry point, see
    ``zoo.moe.routers.registry``) overrides the ones that do not hold for it the same way:
        per_token_choice: each token's experts depend on that token (and its condition) alone, not on the other
            tokens of the batch. False for expert choice, where each expert picks its tokens from the batch.
        fixed_k: every token gets the same number of used slots (no router-made -1 slots). False for routers
            that pick a variable number of experts per token (dtop_p, dirichlet, expert_choice).
        sparse: a token uses fewer than all experts. False for the dense soft gate.
        convex_weights: with its default arguments, a token's combine weights sum to 1 (a convex combination of
            its experts' outputs). False for KERN (l2-normalised: up to sqrt(k), 0 where every score is 0) and
            expert choice (a token's weights are probabilities of the experts that picked it: 0 to 1).
    """

    per_token_choice: bool = True
    fixed_k: bool = True
    sparse: bool = True
    convex_weights: bool = True

    def __init__(self, dim: int, num_experts: int, top_k: int = 2, condition_dim: int = 0):
        super().__init__()
        self.dim, self.num_experts, self.top_k, self.condition_dim = dim, num_experts, top_k, condition_dim
        self.gate = nn.Linear(dim + condition_dim, num_experts, bias=False)

    def router_input(self, x: Tensor, condition: Tensor | None) -> Tensor:
        if self.condition_dim == 0:
            return x
        if condition is None:
            raise ValueError(
                f"{type(self).__name__} was built with condition_dim={self.condition_dim}: pass condition="
            )
        return torch.cat([x, broadcast_condition(condition.to(x.dtype), x.shape[:-1])], dim=-1)

    def compute_logits(self, x: Tensor, condition: Tensor | None = None) -> Tensor:
        """(T, dim) -> (T, E) float32 logits."""
        return self.gate(self.router_input(x, condition)).float()

    def finish(self, routing: Routing) -> Routing:
        """Attach the standard aux losses every router reports (Switch load balance, router z-loss)."""
        from zoo.moe.losses import load_balance_loss, z_loss

        routing.aux.setdefault("load_balance", load_balance_loss(routing))
        routing.aux.setdefault("z", z_loss(routing))
        return routing

    def extra_repr(self) -> str:
        return f"dim={self.dim}, num_experts={self.num_experts}, top_k={self.top_k}, condition_dim={self.condition_dim}"
