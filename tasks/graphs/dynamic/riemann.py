"""Riemannian attention on a κ-stereographic manifold (geoopt), plain and fast, and a Möbius feed-forward expert.

Attention of one curvature expert, per head (queries/keys/values are points of the manifold of curvature κ)::

    q, k, v = expmap0(W_q x / sqrt(d_h)), expmap0(W_k x / sqrt(d_h)), expmap0(W_v x / sqrt(d_h))
    a_ij = softmax_j(-β · d_κ(q_i, k_j)²)                 # geodesic-distance scores, β > 0 learnable
    o_i = gyromidpoint_κ({v_j}, a_ij)                     # weighted Einstein/gyro midpoint (geoopt)
    y_i = W_o logmap0(o_i)                                # back to the tangent space at 0

- **plain** (:func:`plain_riemannian_attention`): geoopt's pairwise ``dist`` and ``weighted_midpoint`` on the
  broadcast (B, H, L, L, d_h) tensors (every Möbius addition materialised).
- **fast** (:func:`fast_riemannian_attention`): the same quantities in closed form from Gram matrices
  (``<q_i, k_j>``, ``|q|²``, ``|k|²``): ``|(-q) ⊕_κ k|²`` is a function of those three, the midpoint is two
  matrix products; memory (B, H, L, L). Same maths, so the two agree to rounding (``test_dygmoce_riemann.py``).

For κ > 0 geoopt's midpoint picks the midpoint or its antipode (the one with the smaller summed distance to
the points); both paths do the same. Shapes: x (B, L, D) -> (B, L, D).
"""

from __future__ import annotations

import math

import torch
from geoopt import Stereographic
from geoopt.manifolds.stereographic import math as kmath
from torch import Tensor, nn


def pairwise_dist_plain(q: Tensor, k: Tensor, curv: Tensor) -> Tensor:
    """(..., L, d), (..., M, d) -> (..., L, M) geodesic distances by geoopt on the broadcast pairs."""
    return kmath.dist(q.unsqueeze(-2), k.unsqueeze(-3), k=curv)


def pairwise_dist_fast(q: Tensor, k: Tensor, curv: Tensor) -> Tensor:
    """(..., L, d), (..., M, d) -> (..., L, M): ``2 artan_κ |(-q) ⊕_κ k|`` from Gram matrices."""
    xy = q @ k.transpose(-1, -2)
    xx = (q * q).sum(-1, keepdim=True)
    yy = (k * k).sum(-1).unsqueeze(-2)
    a = 1 + 2 * curv * xy - curv * yy  # coefficient of -q in the Möbius sum's numerator
    b = 1 + curv * xx  # coefficient of k
    num2 = (a * a * xx - 2 * a * b * xy + b * b * yy).clamp_min(0)
    den = 1 + 2 * curv * xy + curv * curv * xx * yy
    norm = num2.clamp_min(1e-30).sqrt() / kmath.clamp_abs(den, 1e-15)
    return 2 * kmath.artan_k(norm, curv)


def midpoint_plain(v: Tensor, weights: Tensor, curv: Tensor) -> Tensor:
    """v (..., M, d), weights (..., L, M) -> (..., L, d): geoopt's weighted midpoint per row of weights."""
    xs = v.unsqueeze(-3).expand(*weights.shape, v.shape[-1])
    return kmath.weighted_midpoint(xs, weights, k=curv, reducedim=[-2])


def midpoint_fast(v: Tensor, weights: Tensor, curv: Tensor) -> Tensor:
    """The same midpoint as :func:`midpoint_plain` with two matrix products (and the κ > 0 antipode check
    through :func:`pairwise_dist_fast`)."""
    gamma = kmath.lambda_x(v, k=curv, keepdim=True)  # (..., M, 1)
    nominator = weights @ (gamma * v)
    denominator = weights @ (gamma - 1)
    two_mean = nominator / kmath.clamp_abs(denominator, 1e-10)
    mean = kmath.mobius_scalar_mul(torch.tensor(0.5, dtype=v.dtype, device=v.device), two_mean, k=curv)
    if bool(curv.gt(0)):
        anti = kmath.antipode(mean, k=curv)
        better = pairwise_dist_fast(anti, v, curv).sum(-1, keepdim=True) < pairwise_dist_fast(mean, v, curv).sum(
            -1, keepdim=True
        )
        mean = torch.where(better, anti, mean)
    return mean


def plain_riemannian_attention(q: Tensor, k: Tensor, v: Tensor, curv: Tensor, beta: Tensor) -> Tensor:
    """q, k, v (B, H, L, d) manifold points -> (B, H, L, d) manifold points (plain pairwise Möbius path)."""
    weights = torch.softmax(-beta * pairwise_dist_plain(q, k, curv).pow(2), dim=-1)
    return midpoint_plain(v, weights, curv)


def fast_riemannian_attention(q: Tensor, k: Tensor, v: Tensor, curv: Tensor, beta: Tensor) -> Tensor:
    """q, k, v (B, H, L, d) manifold points -> (B, H, L, d) manifold points (closed-form Gram path)."""
    weights = torch.softmax(-beta * pairwise_dist_fast(q, k, curv).pow(2), dim=-1)
    return midpoint_fast(v, weights, curv)


ATTENTION = {"plain": plain_riemannian_attention, "fast": fast_riemannian_attention}


class CurvatureAttention(nn.Module):
    """One attention expert on a κ-stereographic manifold with learnable curvature (see the module docstring).

    Args: dim D, heads H (d_h = D / H), init_curvature κ₀, learn_curvature, impl "fast" | "plain", dropout on
    the attention output. Input/output (B, L, D) in the tangent space at the origin.
    """

    def __init__(
        self,
        dim: int,
        heads: int,
        init_curvature: float,
        learn_curvature: bool = True,
        impl: str = "fast",
        dropout: float = 0.0,
    ):
        super().__init__()
        if dim % heads:
            raise ValueError(f"dim {dim} is not divisible by heads {heads}")
        self.heads, self.head_dim, self.impl = heads, dim // heads, impl
        self.manifold = Stereographic(k=init_curvature, learnable=learn_curvature)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)
        self.log_beta = nn.Parameter(torch.zeros(()))
        self.dropout = nn.Dropout(dropout)

    @property
    def curvature(self) -> Tensor:
        return self.manifold.k

    def forward(self, x: Tensor) -> Tensor:
        b, length, dim = x.shape
        tangent = self.qkv(x).view(b, length, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        tangent = tangent / math.sqrt(self.head_dim)
        curv = self.manifold.k
        q, k, v = (kmath.project(kmath.expmap0(t, k=curv), k=curv) for t in tangent)
        o = ATTENTION[self.impl](q, k, v, curv, self.log_beta.exp())
        o = kmath.logmap0(o, k=curv) * math.sqrt(self.head_dim)
        return self.dropout(self.out(o.transpose(1, 2).reshape(b, length, dim)))


class CurvatureFFN(nn.Module):
    """A feed-forward expert on a κ-stereographic manifold (HNN-style Möbius layers, Ganea et al. 2018):
    each layer ``u -> logmap0((W ⊗_κ expmap0(s u)) ⊕_κ expmap0(s b)) / s`` (s = 1/sqrt(D) keeps points away from
    the ball's boundary), GELU in between. (B, L, D) -> (B, L, D); κ = 0 is an ordinary two-layer GELU MLP.
    (Without the Möbius bias the layer would be linear for every κ: logmap0(W ⊗ expmap0(u)) = W u.)"""

    def __init__(self, dim: int, hidden: int, init_curvature: float, learn_curvature: bool = True):
        super().__init__()
        self.manifold = Stereographic(k=init_curvature, learnable=learn_curvature)
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)
        self.scale = 1.0 / math.sqrt(dim)

    @property
    def curvature(self) -> Tensor:
        return self.manifold.k

    def _mobius_linear(self, layer: nn.Linear, x: Tensor, scale: float) -> Tensor:
        # logmap0(W ⊗ expmap0(u)) = W u for every κ, so the curvature acts through the Möbius bias addition
        curv = self.manifold.k
        point = kmath.project(kmath.expmap0(x * scale, k=curv), k=curv)
        bias = kmath.expmap0(layer.bias * scale, k=curv)
        out = kmath.project(kmath.mobius_add(kmath.mobius_matvec(layer.weight, point, k=curv), bias, k=curv), k=curv)
        return kmath.logmap0(out, k=curv) / scale

    def forward(self, x: Tensor) -> Tensor:
        hidden = nn.functional.gelu(self._mobius_linear(self.fc1, x, self.scale))
        return self._mobius_linear(self.fc2, hidden, self.scale)
