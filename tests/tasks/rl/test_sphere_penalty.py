"""SPHERE's Parseval penalty, its gradient scaling and r_e(K), against their closed forms."""

import math

import pytest
import torch

from zoo_tasks.rl.continual.sphere import (
    effective_rank,
    empirical_ntk,
    gating_penalty,
    grad_norm,
    parseval_penalty,
    penalty_value,
    routed_features,
    scaled_sum,
)


@pytest.mark.parametrize("t, d", [(64, 12), (8, 40)])  # A = Phi^T Phi / T, and the Phi Phi^T / T branch (D > T)
def test_penalty_is_d_times_the_variance_of_the_gram_eigenvalues(t, d):
    phi = torch.randn(t, d, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    eig = torch.linalg.eigvalsh(phi.T @ phi / t)  # all D eigenvalues of A (zeros included when D > T)
    expected = d * eig.var(unbiased=False)
    torch.testing.assert_close(parseval_penalty(phi), expected)


def test_penalty_is_zero_for_isotropic_features_and_positive_otherwise():
    q, _ = torch.linalg.qr(torch.randn(50, 10, dtype=torch.float64))  # orthonormal columns
    iso = 3.0 * math.sqrt(50) * q  # A = 9 I
    assert abs(float(parseval_penalty(iso))) < 1e-9
    stretched = iso * torch.linspace(0.5, 2.0, 10, dtype=torch.float64)
    assert float(parseval_penalty(stretched)) > 1e-3


def test_routed_features_weigh_each_expert_block_and_the_ablations_differ():
    w = torch.tensor([[0.7, 0.3, 0.0], [0.0, 0.4, 0.6]])
    h = torch.arange(2 * 3 * 2, dtype=torch.float32).view(2, 3, 2) + 1
    phi = routed_features(w, h)
    assert phi.shape == (2, 6)
    torch.testing.assert_close(phi[0, :2], 0.7 * h[0, 0])
    torch.testing.assert_close(phi[1, :2], torch.zeros(2))
    # "unweighted": the routed experts' features with weight 1; "gating": the gate weights alone
    torch.testing.assert_close(penalty_value("unweighted", w, h), parseval_penalty(routed_features((w > 0).float(), h)))
    torch.testing.assert_close(penalty_value("gating", w, h), parseval_penalty(w) / 3)
    torch.testing.assert_close(gating_penalty(w), parseval_penalty(w) / 3)


def test_scaled_gradient_sum_adds_the_configured_ratio_of_the_base_norm():
    g = torch.Generator().manual_seed(1)
    base = [torch.randn(4, 3, generator=g), torch.randn(5, generator=g), None]
    extra = [torch.randn(4, 3, generator=g) * 100, None, torch.randn(2, generator=g)]

    def norm(grads):  # exact, without the reference's 1e-8 under the root
        return math.sqrt(sum(float(g.double().square().sum()) for g in grads if g is not None))

    for ratio in (0.001, 0.05, 0.5):
        total = scaled_sum(base, extra, ratio)
        added = [t - b if b is not None else t for t, b in zip(total, base)]
        # float32 cancellation in (base + added) - base and the 1e-8 of the reference's norm bound the tolerance
        assert math.isclose(norm(added), ratio * norm(base), rel_tol=2e-3)
        assert math.isclose(float(grad_norm(base)), norm(base), rel_tol=1e-6)
        torch.testing.assert_close(total[1], base[1])  # no penalty gradient there: unchanged


def test_effective_rank_of_known_kernels():
    assert math.isclose(effective_rank(torch.eye(7)), 7.0, rel_tol=1e-9)
    assert math.isclose(effective_rank(torch.diag(torch.tensor([5.0, 0, 0, 0]))), 1.0, rel_tol=1e-9)
    lam = torch.tensor([4.0, 2.0, 1.0, 1.0])
    p = lam / lam.sum()
    expected = math.exp(float(-(p * p.log()).sum()))
    u, _ = torch.linalg.qr(torch.randn(4, 4, dtype=torch.float64))  # the rank ignores the eigenbasis
    kernel = u @ torch.diag(lam.double()) @ u.T
    assert math.isclose(effective_rank(kernel), expected, rel_tol=1e-6)
    assert effective_rank(torch.zeros(3, 3)) == 0.0


def test_empirical_ntk_equals_explicit_jacobian_product():
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(3, 5), torch.nn.Tanh(), torch.nn.Linear(5, 2))
    x = torch.randn(4, 3)
    params = dict(net.named_parameters())

    def fn(p):
        return torch.func.functional_call(net, p, (x,)).flatten()

    jac = torch.autograd.functional.jacobian(lambda *ps: fn(dict(zip(params, ps))), tuple(params.values()))
    j = torch.cat([part.reshape(8, -1) for part in jac], dim=1)  # (outputs, parameters)
    torch.testing.assert_close(empirical_ntk(fn, params, chunk=3), j @ j.T, rtol=1e-5, atol=1e-6)
