"""TimeMoDE's diffusion schedule against the closed forms, and the TimeDP metrics on known distributions."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from zoo.errors import ConfigError
from zoo_tasks.timeseries.generation.diffusion import GaussianDiffusion, beta_schedule
from zoo_tasks.timeseries.generation.metrics import kl_flat, mdd, mmd_rbf


def test_linear_schedule_is_ldm_squared_linspace_with_timedp_endpoints():
    betas = beta_schedule("linear", 200, 5e-4, 0.1)
    assert betas[0].item() == pytest.approx(5e-4) and betas[-1].item() == pytest.approx(0.1)
    step = torch.full((199,), (0.1**0.5 - 5e-4**0.5) / 199, dtype=torch.float64)
    assert torch.allclose(betas.sqrt()[1:] - betas.sqrt()[:-1], step)


def test_cosine_schedule_reproduces_its_alpha_bar():
    t, s = 50, 8e-3
    abar = torch.cumprod(1 - beta_schedule("cosine", t), 0)
    f = lambda u: math.cos((u / t + s) / (1 + s) * math.pi / 2) ** 2  # noqa: E731
    assert torch.allclose(abar, torch.tensor([f(u) / f(0) for u in range(1, t + 1)], dtype=torch.float64), atol=1e-6)
    with pytest.raises(ConfigError, match="unknown schedule 'quadratic'"):
        beta_schedule("quadratic", 10)


def test_q_sample_has_the_closed_form_marginal():
    diff = GaussianDiffusion(200)
    x0 = torch.full((200_000, 1), 0.7)
    t = torch.full((200_000,), 120)
    xt = diff.q_sample(x0, t, torch.randn_like(x0))
    abar = torch.prod(1 - beta_schedule("linear", 200)[:121]).item()
    assert xt.mean().item() == pytest.approx(math.sqrt(abar) * 0.7, abs=5e-3)
    assert xt.var().item() == pytest.approx(1 - abar, abs=5e-3)


def test_posterior_equals_the_product_of_gaussians():
    """q(x_{t-1} | x_t, x_0) ∝ q(x_t | x_{t-1}) q(x_{t-1} | x_0): precision-weighted combination."""
    diff = GaussianDiffusion(200)
    betas = beta_schedule("linear", 200).double()
    abar = torch.cumprod(1 - betas, 0)
    x0, xt = torch.tensor([[0.3]]), torch.tensor([[-1.1]])
    for step in (1, 57, 199):
        a, ap = 1 - betas[step], abar[step - 1]
        prec = a / betas[step] + 1 / (1 - ap)  # x_t = sqrt(a) x_{t-1} + N(0, beta); x_{t-1} ~ N(sqrt(ap) x0, 1 - ap)
        mean = (a.sqrt() * xt.double() / betas[step] + ap.sqrt() * x0.double() / (1 - ap)) / prec
        got_mean, got_log_var = diff.q_posterior(x0, xt, torch.tensor([step]))
        assert got_mean.item() == pytest.approx(mean.item(), rel=1e-5)
        assert got_log_var.exp().item() == pytest.approx((1 / prec).item(), rel=1e-5)
    eps = torch.randn(4, 3)
    x0 = torch.randn(4, 3)
    t = torch.tensor([0, 5, 100, 199])
    assert torch.allclose(diff.predict_x0(diff.q_sample(x0, t, eps), t, eps), x0, atol=1e-4)


def test_sampler_with_the_true_noise_recovers_a_point_mass():
    """For data = c exactly, the optimal eps is (x_t - sqrt(abar) c) / sqrt(1 - abar): sampling returns c."""
    diff = GaussianDiffusion(50, "linear", 1e-4, 0.2)

    def eps_fn(x, t):
        abar = diff.alphas_cumprod[t].reshape(-1, 1)
        return (x - abar.sqrt() * 0.4) / (1 - abar).sqrt()

    out = diff.sample(eps_fn, (64, 1), generator=torch.Generator().manual_seed(0))
    assert torch.allclose(out, torch.full_like(out, 0.4), atol=1e-3)


def test_full_chain_sampler_equals_the_ddpm_posterior_loop_and_respacing_keeps_a_point_mass():
    diff = GaussianDiffusion(30)
    weight = torch.tensor(0.3)

    def eps_fn(x, t):
        return weight * x + 0.01 * t.float().reshape(-1, 1)

    got = diff.sample(eps_fn, (5, 2), clip=1.0, generator=torch.Generator().manual_seed(3))
    gen = torch.Generator().manual_seed(3)
    x = torch.randn((5, 2), generator=gen)
    for step in reversed(range(30)):
        t = torch.full((5,), step)
        mean, log_var = diff.q_posterior(diff.predict_x0(x, t, eps_fn(x, t)).clamp(-1, 1), x, t)
        x = mean if step == 0 else mean + (0.5 * log_var).exp() * torch.randn((5, 2), generator=gen)
    assert torch.allclose(got, x, atol=1e-5)
    assert diff.sampling_steps(7).tolist() == [0, 5, 10, 14, 19, 24, 29]

    def exact(x, t):
        abar = diff.alphas_cumprod[t].reshape(-1, 1)
        return (x - abar.sqrt() * -0.2) / (1 - abar).sqrt()

    out = diff.sample(exact, (16, 1), steps=7, generator=torch.Generator().manual_seed(0))
    assert torch.allclose(out, torch.full_like(out, -0.2), atol=1e-3)


def _reference_mdd(x_real: torch.Tensor, x_fake: torch.Tensor, n_bins: int = 20) -> float:
    """TimeDP's HistoLoss, transcribed (metrics/feature_distance_eval.py)."""
    losses = []
    for i in range(x_real.shape[2]):
        for t in range(x_real.shape[1]):
            x_ti = x_real[:, t, i].reshape(-1, 1)
            a, b = x_ti.min().item(), x_ti.max().item()
            b = b + 1e-2 if b == a else b
            bins = torch.linspace(a, b, n_bins + 1)
            delta = bins[1] - bins[0]
            density_r = torch.histc(x_ti, bins=n_bins, min=a, max=b).float() / delta / float(x_ti.shape[0])
            loc = (0.5 * (bins[1:] + bins[:-1])).view(1, -1)
            xf = x_fake[:, t, i].contiguous().view(-1, 1).repeat(1, loc.shape[1])
            dist = torch.abs(xf - loc)
            left = ((delta / 2.0 - (loc - xf)) == 0.0).float()
            counter = ((delta / 2.0 - dist) * ((delta / 2.0 - dist) >= 0).float() > 0.0).float() + left
            losses.append(torch.abs(counter.mean(0) / delta - density_r).mean())
    return torch.stack(losses).mean().item()


def test_mdd_equals_timedp_histoloss_and_orders_distributions():
    rng = np.random.default_rng(0)
    real = rng.normal(size=(500, 6, 1))
    near, far = rng.normal(size=(400, 6, 1)), rng.normal(2.0, 1.0, size=(400, 6, 1))
    for fake in (near, far):
        ours = mdd(real, fake)
        assert ours == pytest.approx(_reference_mdd(torch.tensor(real).float(), torch.tensor(fake).float()), rel=1e-4)
    assert mdd(real, near) < mdd(real, far)
    assert mdd(real, real) == pytest.approx(np.mean([0.0]), abs=0.02)  # only the right edge value is lost


def test_kl_is_zero_on_itself_and_grows_with_shift():
    rng = np.random.default_rng(1)
    real = rng.normal(size=(2000, 24))
    assert kl_flat(real, real) == pytest.approx(0.0, abs=1e-6)
    assert kl_flat(real, rng.normal(size=(2000, 24))) < kl_flat(real, rng.normal(1.0, 1.0, size=(2000, 24)))


def test_mmd_matches_the_closed_form_of_two_point_masses():
    x, y = np.zeros((10, 2)), np.ones((7, 2))
    # gamma = 1 / 2 features; ||x - y||^2 = 2 -> k = exp(-1)
    assert mmd_rbf(x, y) == pytest.approx(2 - 2 * math.exp(-1.0), rel=1e-6)
    assert mmd_rbf(x, x) == pytest.approx(0.0, abs=1e-7)
