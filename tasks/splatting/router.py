"""MoE-GS's volume-aware pixel router (Jin et al., MoE-GS, ICLR 2026, arXiv 2510.19210) and its two ablations.

Every Gaussian i of expert k carries router weights: a volume weight w_i, a view-dependent weight w_i^dir (degree-1
spherical harmonics evaluated on the viewing direction) and a temporal weight w_i^time (multiplied by t). They are
splatted like colour through that expert's own (frozen) Gaussians -> per pixel u, per expert: w_2D, w_2D^dir,
w_2D^time (weight splatting, one extra 3-channel pass of the expert's render). Then, per pixel::

    volume_pixel (the paper): R'_k(u) = w_2D,k(u) + Phi(w_2D^dir, w_2D^time, gamma(r(u)), gamma(t))_k
    volume  (ablation):       R'_k(u) = w_2D,k(u) + w_2D,k^dir(u) + w_2D,k^time(u)
    pixel   (ablation):       R'_k(u) = Phi(gamma(r(u)), gamma(t))_k

with r(u) the pixel's world-space ray direction, gamma a positional encoding and Phi a small MLP; G'(u) = softmax_k R'
and I(u) = sum_k G'_k(u) I_k(u). With ``router`` set to a ``zoo.moe`` router name instead of ``"moe_gs"``, that
router gates the same per-pixel features (its linear gate replaces the fixed sum / Phi).

Shapes: splat (P, E, 3) per pixel and expert [w_2D, w_2D^dir, w_2D^time]; rays (P, 3); t scalar -> Routing over P
pixel tokens and E experts.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from zoo.errors import ConfigError
from zoo.moe import Routing, make_router
from zoo_tasks.splatting.experts import posenc
from zoo_tasks.splatting.gaussians import GaussianState

MODES = ("volume_pixel", "volume", "pixel")
PAPER_ROUTER = "moe_gs"
RAY_LEVELS = 4
TIME_LEVELS = 4


def pixel_rays(viewmat: Tensor, K: Tensor, width: int, height: int) -> Tensor:
    """(H W, 3) unit world-space ray directions of the pixel centres (OpenCV camera, row-major pixels)."""
    y, x = torch.meshgrid(torch.arange(height), torch.arange(width), indexing="ij")
    pix = torch.stack([x.reshape(-1) + 0.5, y.reshape(-1) + 0.5, torch.ones(height * width)], dim=-1).to(K)
    cam = pix @ torch.linalg.inv(K).t()
    world = cam @ viewmat[:3, :3]  # R^T d for each row d
    return torch.nn.functional.normalize(world, dim=-1)


def dense_routing(logits: Tensor) -> Routing:
    """Softmax over all E experts as a ``Routing`` (every pixel uses every expert)."""
    P, E = logits.shape
    indices = torch.arange(E, device=logits.device).expand(P, E)
    probs = torch.softmax(logits.float(), dim=-1)
    return Routing(indices=indices, weights=probs, logits=logits.float(), probs=probs)


def require_convex_weights(gate: nn.Module, name: str, dim: int, tokens: int = 256) -> None:
    """Refuse (ConfigError) a ``zoo.moe`` router whose weights for a pixel need not sum to 1.

    The blend ``I(u) = sum_k G'_k(u) I_k(u)`` is an image only when the weights are a convex combination; KERN's
    l2-normalised weights sum to up to sqrt(k) (and to 0 where every score is 0), a ``route_scale`` != 1 scales them.
    A router class declares whether its default weights are convex (``convex_weights``, checked by ``make_router``
    before this); its keyword arguments can still change that (``route_scale``, ``normalize=False``), so the built
    gate is probed once on ``tokens`` random feature vectors (``dim``), in eval mode, without touching the global
    RNG or the router's running state.
    """
    was_training = gate.training
    with torch.random.fork_rng(devices=[]), torch.no_grad():
        torch.manual_seed(0)
        gate.eval()
        routing = gate(torch.randn(tokens, dim))
    gate.train(was_training)
    sums = torch.where(routing.indices >= 0, routing.weights, 0.0).sum(-1)
    if not torch.allclose(sums, torch.ones_like(sums), atol=1e-4):
        raise ConfigError(
            f"router {name!r} cannot route MoE-GS's per-pixel expert blend: a pixel's expert weights must sum to 1 "
            f"(a convex combination of the experts' images); on a probe batch they summed to "
            f"{sums.min().item():.2f}..{sums.max().item():.2f}"
        )


class VolumePixelRouter(nn.Module):
    """See the module docstring. ``num_gaussians``: Gaussians of each expert (their router weights)."""

    def __init__(
        self,
        num_gaussians: list[int],
        mode: str = "volume_pixel",
        router: str = PAPER_ROUTER,
        top_k: int = 2,
        router_kwargs: dict | None = None,
        hidden: int = 32,
    ) -> None:
        super().__init__()
        if mode not in MODES:
            raise ConfigError(f"router_mode={mode!r}: choose one of {', '.join(MODES)}")
        self.mode, self.name = mode, router
        E = len(num_gaussians)
        # per Gaussian: w (1), w_dir (4 SH degree-1 coefficients), w_time (1); zero: uniform routing at the start
        self.gauss_weights = nn.ParameterList(nn.Parameter(torch.zeros(n, 6)) for n in num_gaussians)
        pixel_dim = 3 * (1 + 2 * RAY_LEVELS) + (1 + 2 * TIME_LEVELS)
        phi_in = {"volume_pixel": 2 * E + pixel_dim, "pixel": pixel_dim, "volume": 0}[mode]
        self.phi = None
        if phi_in and router == PAPER_ROUTER:
            last = nn.Linear(hidden, E)
            nn.init.zeros_(last.weight)
            nn.init.zeros_(last.bias)
            self.phi = nn.Sequential(nn.Linear(phi_in, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(), last)
        self.gate = None
        if router != PAPER_ROUTER:
            dim = {"volume_pixel": 3 * E + pixel_dim, "pixel": pixel_dim, "volume": 3 * E}[mode]
            self.gate = make_router(
                router, dim, E, top_k=min(top_k, E), mixture="MoE-GS's per-pixel expert blend",
                needs=("per_token_choice", "convex_weights"), **(router_kwargs or {}),
            )  # fmt: skip
            require_convex_weights(self.gate, router, dim)

    def gaussian_channels(self, k: int, state: GaussianState, viewmat: Tensor, t: Tensor) -> Tensor:
        """(N_k, 3) channels to splat for expert k: [w_i, SH1(view dir) . w_i^dir, t w_i^time]."""
        from gsplat.cuda._torch_impl import _eval_sh_bases_fast

        w = self.gauss_weights[k]
        campos = torch.linalg.inv(viewmat)[:3, 3]
        dirs = torch.nn.functional.normalize(state.means.detach() - campos, dim=-1)
        directional = (_eval_sh_bases_fast(4, dirs) * w[:, 1:5]).sum(-1)
        return torch.stack([w[:, 0], directional, t.reshape(()) * w[:, 5]], dim=-1)

    @property
    def needs_splat(self) -> bool:
        return self.mode != "pixel"

    def forward(self, splat: Tensor | None, rays: Tensor, t: Tensor) -> Routing:
        P = rays.shape[0]
        pixel = torch.cat([posenc(rays, RAY_LEVELS), posenc(t.reshape(1, 1).to(rays).expand(P, 1), TIME_LEVELS)], -1)
        if self.gate is not None:
            parts = {"volume_pixel": [splat.flatten(1), pixel], "volume": [splat.flatten(1)], "pixel": [pixel]}
            return self.gate(torch.cat(parts[self.mode], dim=-1))
        if self.mode == "volume":
            return dense_routing(splat.sum(dim=-1))
        if self.mode == "pixel":
            return dense_routing(self.phi(pixel))
        return dense_routing(splat[..., 0] + self.phi(torch.cat([splat[..., 1:].flatten(1), pixel], dim=-1)))
