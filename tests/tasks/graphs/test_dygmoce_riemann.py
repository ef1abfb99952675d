"""Fast Riemannian attention equals the plain (pairwise Möbius) one; a flat Möbius FFN is an ordinary MLP."""

from __future__ import annotations

import pytest
import torch
from geoopt.manifolds.stereographic import math as kmath

from zoo_tasks.graphs.dynamic.riemann import (
    CurvatureAttention,
    CurvatureFFN,
    fast_riemannian_attention,
    pairwise_dist_fast,
    pairwise_dist_plain,
    plain_riemannian_attention,
)


@pytest.mark.parametrize("curvature", [-1.5, -0.3, 0.0, 0.4, 1.0])
def test_fast_attention_equals_plain(curvature):
    torch.manual_seed(0)
    k = torch.tensor(curvature, dtype=torch.float64)
    q, key, v = (kmath.project(kmath.expmap0(0.6 * torch.randn(2, 3, 9, 4, dtype=torch.float64), k=k), k=k)
                 for _ in range(3))  # fmt: skip
    assert torch.allclose(pairwise_dist_fast(q, key, k), pairwise_dist_plain(q, key, k), atol=1e-10)
    beta = torch.tensor(0.7, dtype=torch.float64)
    fast, plain = fast_riemannian_attention(q, key, v, k, beta), plain_riemannian_attention(q, key, v, k, beta)
    assert torch.allclose(fast, plain, atol=1e-10)


@pytest.mark.parametrize("curvature", [-1.0, 0.0, 1.0])
def test_attention_module_paths_agree_in_output_and_gradient(curvature):
    torch.manual_seed(1)
    module = CurvatureAttention(16, 2, curvature, impl="fast")
    x = torch.randn(3, 7, 16)
    grads = {}
    outs = {}
    for impl in ("fast", "plain"):
        module.impl = impl
        module.zero_grad()
        outs[impl] = module(x)
        outs[impl].square().sum().backward()
        grads[impl] = module.manifold.k.grad.clone()
    assert torch.allclose(outs["fast"], outs["plain"], atol=1e-5)
    assert torch.allclose(grads["fast"], grads["plain"], rtol=1e-3, atol=1e-4)
    assert grads["fast"].abs() > 0  # the curvature learns


def test_flat_mobius_ffn_is_a_gelu_mlp():
    torch.manual_seed(2)
    ffn = CurvatureFFN(8, 16, 0.0, learn_curvature=False)
    x = torch.randn(5, 8)
    reference = ffn.fc2(torch.nn.functional.gelu(ffn.fc1(x)))  # biases included
    assert torch.allclose(ffn(x), reference, atol=1e-5)


@pytest.mark.parametrize("curvature", [-1.0, 1.0])
def test_curved_ffn_differs_from_flat_and_its_curvature_learns(curvature):
    torch.manual_seed(3)
    ffn = CurvatureFFN(8, 16, curvature)
    with torch.no_grad():
        ffn.fc1.bias.normal_(0, 3.0)
        ffn.fc2.bias.normal_(0, 3.0)
    x = torch.randn(5, 8)
    y = ffn(x)
    assert (y - ffn.fc2(torch.nn.functional.gelu(ffn.fc1(x)))).abs().max() > 1e-2
    y.square().sum().backward()
    assert ffn.manifold.k.grad.abs() > 0
