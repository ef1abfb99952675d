"""Aux losses as plain functions of a `Routing`; padding tokens (``valid == False``) never count.

All return an unweighted scalar tensor; the layer (or the task) chooses the weights.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import Tensor

from zoo.moe.routing import Routing


def _mask(routing: Routing) -> tuple[Tensor, Tensor]:
    m = routing.token_mask().to(routing.logits.dtype)
    return m, m.sum().clamp_min(1.0)


def load_balance_loss(routing: Routing) -> Tensor:
    """Switch Transformer load balance (Fedus et al. 2021): ``E * sum_e f_e * P_e``.

    ``f_e`` = fraction of (non-dropped) token slots routed to expert e (no gradient), ``P_e`` = mean router
    probability of e over real tokens. Equals 1 under uniform routing.
    """
    m, n = _mask(routing)
    counts = routing.selected() * m[:, None]
    f = counts.sum(0) / counts.sum().clamp_min(1.0)
    p = (routing.router_probs() * m[:, None]).sum(0) / n
    return routing.num_experts * (f * p).sum()


def z_loss(routing: Routing) -> Tensor:
    """Router z-loss (ST-MoE, Zoph et al. 2022): ``mean_t logsumexp(logits_t)^2`` over real tokens."""
    m, n = _mask(routing)
    return (torch.logsumexp(routing.logits.float(), dim=-1).square() * m).sum() / n


def _cv_squared(v: Tensor, eps: float = 1e-10) -> Tensor:
    if v.numel() <= 1:
        return v.new_zeros(())
    return v.var(unbiased=False) / (v.mean().square() + eps)


def cv_squared_loss(routing: Routing) -> Tensor:
    """Importance + load cv² (Shazeer et al. 2017): ``cv²(sum_t w_t) + cv²(load)``.

    Importance = per-expert sum of combine weights (differentiable). Load = per-expert sum of the smooth
    estimator ``routing.load_prob`` when the router provides it (noisy top-k), else hard counts (which carry
    no gradient).
    """
    m, _ = _mask(routing)
    importance = (routing.dense_weights() * m[:, None]).sum(0)
    if routing.load_prob is not None:
        load = (routing.load_prob * m[:, None]).sum(0)
    else:
        load = (routing.selected() * m[:, None]).sum(0)
    return _cv_squared(importance) + _cv_squared(load)


def entropy_loss(routing: Routing) -> Tensor:
    """Mean per-token entropy of the router probabilities (nats). Minimise for sharper, confident routing;
    give it a negative weight to encourage exploration."""
    m, n = _mask(routing)
    p = routing.router_probs()
    ent = -(p * p.clamp_min(1e-12).log()).sum(-1)
    return (ent * m).sum() / n


def erc_loss(
    router_weight: Tensor,
    experts,
    noise_std: float = 0.1,
    alpha: float = 1.0,
    generator: torch.Generator | None = None,
) -> Tensor:
    """Expert-router coupling loss (ERC loss, ICLR 2026 seed abstract).

    Each router row ``W[i]`` (E, d) is a cluster centre of expert i's tokens; proxy tokens
    ``x_i = W[i] + noise_std * ||W[i]|| / sqrt(d) * eps`` (E, d). ``M[i, j]`` (E, E) = activation norm of
    expert j on proxy i (``experts.activation_norms`` if the bank has it, else output norm). Two
    constraints, hinge-penalised: expert j fires most on its own proxy (``M[i, j] <= alpha * M[j, j]``) and
    proxy i fires expert i most (``M[i, j] <= alpha * M[i, i]``)::

        loss = mean_{i != j} relu(M[i, j] - alpha * M[j, j]) + relu(M[i, j] - alpha * M[i, i])

    ``alpha <= 1`` tightens the coupling (stronger specialisation). Needs only E proxy tokens, so it costs
    one extra tiny forward. ``router_weight`` is ``router.gate.weight[:, :dim]`` (drop condition columns).
    """
    w = router_weight
    E, d = w.shape
    eps = torch.randn(w.shape, generator=generator, device=w.device, dtype=w.dtype)
    proxies = w + noise_std * w.norm(dim=-1, keepdim=True) / d**0.5 * eps
    if hasattr(experts, "activation_norms"):
        M = experts.activation_norms(proxies)
    else:
        M = experts.forward_dense(proxies).flatten(2).norm(dim=-1)
    diag = M.diagonal()
    off = ~torch.eye(E, dtype=torch.bool, device=M.device)
    col = F.relu(M - alpha * diag[None, :])  # expert j on others' proxies vs on its own
    row = F.relu(M - alpha * diag[:, None])  # proxy i on other experts vs on its own expert
    return ((col + row) * off).sum() / max(E * (E - 1), 1)


LOSSES: dict[str, Callable[[Routing], Tensor]] = {
    "load_balance": load_balance_loss,
    "z": z_loss,
    "cv_squared": cv_squared_loss,
    "entropy": entropy_loss,
}
