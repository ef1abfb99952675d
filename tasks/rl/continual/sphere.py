"""SPHERE's Parseval penalty, its gradient scaling, and the spectral-plasticity measure r_e(K).

SPHERE (Luo et al., ICML 2026, arXiv 2605.04712; sphere-rl/sphere ``src/algorithms/moe/sphere.py``): MoE policies
lose plasticity in continual RL as the empirical NTK's effective rank collapses. Its tractable proxy is the Gram
matrix of the routing-weighted expert features, pushed towards a multiple of the identity (a Parseval frame):

    Phi = concat_e (w_e(s) * h_e(s))            (T, D = E * H): expert e's last hidden features, gate weight w_e
    A   = Phi^T Phi / T  (D <= T)  or  Phi Phi^T / T  (D > T; same non-zero eigenvalues)
    L   = ||A||_F^2 - tr(A)^2 / D  =  D * Var(eigenvalues of A over D)      (0 iff A = c I)

The reference scales the penalty's gradient to a fixed ratio of the policy loss's gradient norm
(``sphere_scale_mode=grad``, ratio 0.001 in its script): ``g = g_pi + ratio * ||g_pi|| / ||g_L|| * g_L``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from torch import Tensor

PENALTIES = ("none", "sphere", "unweighted", "gating")


def parseval_penalty(phi: Tensor) -> Tensor:
    """``||A||_F^2 - tr(A)^2 / D`` of ``A = Phi^T Phi / T`` (or ``Phi Phi^T / T`` when D > T). phi (T, D) -> ()."""
    t, d = phi.shape
    gram = phi.T @ phi / t if d <= t else phi @ phi.T / t
    return gram.square().sum() - torch.diagonal(gram).sum().square() / d


def routed_features(weights: Tensor, features: Tensor) -> Tensor:
    """SPHERE's Phi: dense gate weights (T, E) times each expert's features (T, E, H), flattened to (T, E * H)."""
    return (weights.unsqueeze(-1) * features).flatten(1)


def gating_penalty(probs: Tensor) -> Tensor:
    """The reference's gating variant (``sphere_output_loss``): the Parseval penalty on the dense gate weights
    P (T, E), divided once more by E. probs (T, E) -> ()."""
    return parseval_penalty(probs) / probs.shape[1]


def penalty_value(kind: str, weights: Tensor, features: Tensor) -> Tensor:
    """The penalty ``kind`` in ``PENALTIES`` (not "none") of one batch: "sphere" on the routing-weighted features,
    "unweighted" (ablation) on the concatenated features of every expert without gate weights, "gating" on the
    gate weights alone. weights (T, E), features (T, E, H) -> (). "unweighted" keeps the routed experts'
    features (an unrouted expert is not part of the state's computation, and the sparse actor never runs it)."""
    if kind == "sphere":
        return parseval_penalty(routed_features(weights, features))
    if kind == "unweighted":
        return parseval_penalty(routed_features((weights > 0).to(features.dtype), features))
    if kind == "gating":
        return gating_penalty(weights)
    raise ValueError(f"no penalty value for {kind!r}")


def grad_norm(grads: Sequence[Tensor | None]) -> Tensor:
    """L2 norm over a list of gradients (None counts as 0), with the reference's 1e-8 under the root."""
    total = sum((g.double().square().sum() for g in grads if g is not None), torch.zeros((), dtype=torch.float64))
    return torch.sqrt(total + 1e-8).float()


def scaled_sum(base: Sequence[Tensor | None], extra: Sequence[Tensor | None], ratio: float) -> list[Tensor | None]:
    """``base + ratio * ||base|| / (||extra|| + 1e-8) * extra``, tensor by tensor: the added gradient's norm is
    ``ratio`` times the base gradient's (SPHERE's ``grad`` scale mode). The scale is a constant (no gradient)."""
    scale = ratio * grad_norm(base) / (grad_norm(extra) + 1e-8)
    out = []
    for b, e in zip(base, extra, strict=True):
        if e is None:
            out.append(b)
        elif b is None:
            out.append(scale * e)
        else:
            out.append(b + scale * e)
    return out


def effective_rank(kernel: Tensor) -> float:
    """``r_e(K) = exp(H(p))``, ``p = lambda / sum(lambda)`` the normalised eigenvalues of the symmetric PSD
    ``kernel`` (N, N) (negative round-off clipped to 0). N orthogonal equal directions give N; one gives 1."""
    eig = torch.linalg.eigvalsh(kernel.double()).clamp_min(0.0)
    total = eig.sum()
    if total <= 0:
        return 0.0
    p = eig / total
    p = p[p > 0]
    return float(torch.exp(-(p * p.log()).sum()))


def empirical_ntk(fn: Callable[[dict[str, Tensor]], Tensor], params: dict[str, Tensor], chunk: int = 64) -> Tensor:
    """The empirical NTK ``K = J J^T`` (N, N) of ``fn(params) -> (N,)`` outputs w.r.t. ``params``, without storing
    J: column j of K is ``J (J^T e_j)`` (a vector-Jacobian product, then a Jacobian-vector product), ``chunk``
    columns at a time under ``torch.func.vmap``. Memory: ``chunk`` copies of the parameters."""
    from torch.func import jvp, vjp, vmap

    params = {k: v.detach() for k, v in params.items()}
    out, pullback = vjp(fn, params)
    n = out.shape[0]

    def column(e: Tensor) -> Tensor:
        (tangent,) = pullback(e)
        return jvp(fn, (params,), (tangent,))[1]

    eye = torch.eye(n, dtype=out.dtype)
    cols = [vmap(column)(eye[i : i + chunk]) for i in range(0, n, chunk)]
    return torch.cat(cols, 0)  # row j = column j (K is symmetric)
