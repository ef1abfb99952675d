"""Gaussian diffusion (DDPM) with the schedules of TimeDP's latent-diffusion code (microsoft/TimeCraft,
``ldm/modules/diffusionmodules/util.py``, ``ldm/models/diffusion/ddpm_time.py``).

Ho et al., "Denoising Diffusion Probabilistic Models", NeurIPS 2020, arXiv 2006.11239, Eqs. 4, 6, 7, 11:
``q(x_t | x_0) = N(sqrt(abar_t) x_0, (1 - abar_t) I)`` with ``abar_t = prod_{s<=t} (1 - beta_s)``; the posterior
``q(x_{t-1} | x_t, x_0) = N(c1_t x_0 + c2_t x_t, beta~_t I)`` with ``c1 = beta_t sqrt(abar_{t-1}) / (1 - abar_t)``,
``c2 = (1 - abar_{t-1}) sqrt(alpha_t) / (1 - abar_t)``, ``beta~_t = beta_t (1 - abar_{t-1}) / (1 - abar_t)``;
the model predicts the noise (``eps``) and ``x_0 = (x_t - sqrt(1 - abar_t) eps) / sqrt(abar_t)``.
Schedules: ``"linear"`` is LDM's (``linspace(sqrt(start), sqrt(end), T) ** 2``, TimeDP: 5e-4 .. 0.1, T = 200),
``"cosine"`` Nichol & Dhariwal 2021 (arXiv 2102.09672, Eq. 17), ``"sqrt_linear"`` a plain linspace.
Timesteps are 0-based: t = 0 is the first noising step.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import Tensor, nn

from zoo.errors import ConfigError

SCHEDULES = ("linear", "cosine", "sqrt_linear")


def beta_schedule(kind: str, steps: int, start: float = 5e-4, end: float = 0.1, cosine_s: float = 8e-3) -> Tensor:
    """(steps,) float64 betas."""
    if steps < 1:
        raise ConfigError(f"model.init_args.timesteps must be >= 1, got {steps}")
    if kind == "linear":
        return torch.linspace(start**0.5, end**0.5, steps, dtype=torch.float64) ** 2
    if kind == "sqrt_linear":
        return torch.linspace(start, end, steps, dtype=torch.float64)
    if kind == "cosine":
        f = torch.arange(steps + 1, dtype=torch.float64) / steps + cosine_s
        abar = torch.cos(f / (1 + cosine_s) * math.pi / 2) ** 2
        abar = abar / abar[0]
        return (1 - abar[1:] / abar[:-1]).clamp(0, 0.999)
    raise ConfigError(f"unknown schedule {kind!r}; choose one of {', '.join(SCHEDULES)}")


def _take(buffer: Tensor, t: Tensor, ndim: int) -> Tensor:
    return buffer[t].reshape(-1, *([1] * (ndim - 1)))


class GaussianDiffusion(nn.Module):
    """The fixed forward process and ancestral sampler (no parameters; the schedule is float32 buffers
    computed in float64).

    Shapes: ``q_sample(x0 (B, ...), t (B,), noise) -> (B, ...)``; ``sample(eps_fn, shape)`` with
    ``eps_fn(x_t (B, ...), t (B,)) -> eps (B, ...)``.
    """

    def __init__(self, timesteps: int = 200, schedule: str = "linear", start: float = 5e-4, end: float = 0.1):
        super().__init__()
        betas = beta_schedule(schedule, timesteps, start, end)
        alphas = 1 - betas
        abar = torch.cumprod(alphas, 0)
        abar_prev = torch.cat([torch.ones(1, dtype=torch.float64), abar[:-1]])
        post_var = betas * (1 - abar_prev) / (1 - abar)
        values = {
            "betas": betas,
            "alphas_cumprod": abar,
            "alphas_cumprod_prev": abar_prev,
            "sqrt_alphas_cumprod": abar.sqrt(),
            "sqrt_one_minus_alphas_cumprod": (1 - abar).sqrt(),
            "posterior_variance": post_var,
            # log of the posterior variance, clipped at t = 0 where it is 0 (as in DDPM / LDM)
            "posterior_log_variance": torch.log(torch.cat([post_var[1:2], post_var[1:]])),
            "posterior_mean_coef1": betas * abar_prev.sqrt() / (1 - abar),
            "posterior_mean_coef2": (1 - abar_prev) * alphas.sqrt() / (1 - abar),
        }
        for name, value in values.items():
            self.register_buffer(name, value.float(), persistent=False)
        self.timesteps = timesteps

    def q_sample(self, x0: Tensor, t: Tensor, noise: Tensor) -> Tensor:
        n = x0.ndim
        return _take(self.sqrt_alphas_cumprod, t, n) * x0 + _take(self.sqrt_one_minus_alphas_cumprod, t, n) * noise

    def predict_x0(self, xt: Tensor, t: Tensor, eps: Tensor) -> Tensor:
        n = xt.ndim
        return (xt - _take(self.sqrt_one_minus_alphas_cumprod, t, n) * eps) / _take(self.sqrt_alphas_cumprod, t, n)

    def q_posterior(self, x0: Tensor, xt: Tensor, t: Tensor) -> tuple[Tensor, Tensor]:
        """(mean, log-variance) of q(x_{t-1} | x_t, x_0)."""
        n = xt.ndim
        mean = _take(self.posterior_mean_coef1, t, n) * x0 + _take(self.posterior_mean_coef2, t, n) * xt
        return mean, _take(self.posterior_log_variance, t, n)

    def sampling_steps(self, steps: int | None = None) -> Tensor:
        """The (S,) timesteps the sampler visits, ascending: all of them, or ``steps`` evenly spaced ones from 0 to
        T - 1 (the respacing of Nichol & Dhariwal 2021, Sec. 4: the same abar at fewer steps)."""
        if steps is None or steps >= self.timesteps:
            return torch.arange(self.timesteps)
        if steps < 1:
            raise ConfigError(f"sample_steps must be >= 1, got {steps}")
        return torch.unique(torch.linspace(0, self.timesteps - 1, steps).round().long())

    @torch.no_grad()
    def sample(
        self,
        eps_fn: Callable[[Tensor, Tensor], Tensor],
        shape: tuple[int, ...],
        clip: float | None = None,
        generator: torch.Generator | None = None,
        device: torch.device | str = "cpu",
        steps: int | None = None,
    ) -> Tensor:
        """Ancestral DDPM sampling from x_T ~ N(0, I); ``clip`` bounds the x_0 estimate (TimeDP clips to [-1, 1]).

        ``steps`` < T samples on a respaced chain: visiting timesteps ``s_1 < ... < s_S`` with
        ``abar'_i = abar_{s_i}``, ``beta'_i = 1 - abar'_i / abar'_{i-1}``; with every step it is the DDPM chain.
        """
        visit = self.sampling_steps(steps).to(self.alphas_cumprod.device)
        abar = self.alphas_cumprod.double()[visit]
        abar_prev = torch.cat([torch.ones(1, dtype=abar.dtype, device=abar.device), abar[:-1]])
        betas = 1 - abar / abar_prev
        post_var = betas * (1 - abar_prev) / (1 - abar)
        coef1 = (betas * abar_prev.sqrt() / (1 - abar)).float()
        coef2 = ((1 - abar_prev) * (1 - betas).sqrt() / (1 - abar)).float()
        sigma = post_var.sqrt().float()
        x = torch.randn(shape, generator=generator, device=device)
        view = (-1, *([1] * (len(shape) - 1)))
        for i in reversed(range(len(visit))):
            t = torch.full((shape[0],), int(visit[i]), dtype=torch.long, device=device)
            x0 = self.predict_x0(x, t, eps_fn(x, t))
            if clip is not None:
                x0 = x0.clamp(-clip, clip)
            mean = coef1[i].reshape(view) * x0 + coef2[i].reshape(view) * x
            if i == 0:
                x = mean
            else:
                x = mean + sigma[i].reshape(view) * torch.randn(shape, generator=generator, device=device)
        return x
