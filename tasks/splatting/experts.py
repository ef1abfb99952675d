"""Three heterogeneous deformation experts: canonical Gaussians + a deformation (x, t) -> (dx, dq, d log s).

- :class:`MLPDeformation`: Deformable-3DGS (Yang et al., CVPR 2024): an MLP on positionally encoded (x, t).
- :class:`HexPlaneDeformation`: 4DGaussians (Wu et al., CVPR 2024): six factorised space-time planes
  (xy, xz, yz, xt, yt, zt) at several resolutions, bilinear features multiplied across planes, a small decoder.
- :class:`TrajectoryDeformation`: SpacetimeGaussians-style (Li et al., CVPR 2024) per-Gaussian trajectories: a
  cubic polynomial plus Fourier terms in t for the position, a linear-in-t rotation.

Each takes means (N, 3) and a scalar time t and returns offsets dx (N, 3), dq (N, 4), ds (N, 3) (log-scale);
the heads start at zero, so every expert starts as the static scene.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from zoo.errors import ConfigError
from zoo_tasks.splatting.gaussians import CanonicalGaussians, GaussianState

EXPERTS = ("mlp", "hexplane", "trajectory")


def posenc(x: Tensor, levels: int) -> Tensor:
    """NeRF positional encoding: (..., D) -> (..., D (1 + 2 levels)), [x, sin(2^l pi x), cos(2^l pi x)]."""
    freqs = (2.0 ** torch.arange(levels, device=x.device, dtype=x.dtype)) * math.pi
    angles = (x[..., None] * freqs).flatten(-2)
    return torch.cat([x, torch.sin(angles), torch.cos(angles)], dim=-1)


class _Heads(nn.Module):
    """Zero-initialised linear heads hidden -> (dx (3), dq (4), ds (3))."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.out = nn.Linear(hidden, 10)
        nn.init.zeros_(self.out.weight)
        nn.init.zeros_(self.out.bias)

    def forward(self, h: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        out = self.out(h)
        return out[..., :3], out[..., 3:7], out[..., 7:]


class MLPDeformation(nn.Module):
    """Deformable-3DGS deformation field: MLP(gamma(x), gamma(t)), input skipped in halfway; (N, 3), t -> offsets."""

    def __init__(self, width: int = 64, depth: int = 4, x_levels: int = 8, t_levels: int = 6) -> None:
        super().__init__()
        self.x_levels, self.t_levels = x_levels, t_levels
        in_dim = 3 * (1 + 2 * x_levels) + (1 + 2 * t_levels)
        self.skip = depth // 2
        self.layers = nn.ModuleList(
            nn.Linear(in_dim if i == 0 else width + (in_dim if i == self.skip else 0), width) for i in range(depth)
        )
        self.heads = _Heads(width)

    def forward(self, means: Tensor, t: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        x = torch.cat([posenc(means, self.x_levels), posenc(t.expand(len(means), 1), self.t_levels)], dim=-1)
        h = x
        for i, layer in enumerate(self.layers):
            h = F.relu(layer(torch.cat([h, x], dim=-1) if i == self.skip and i > 0 else h))
        return self.heads(h)


_PLANES = ((0, 1), (0, 2), (1, 2), (0, 3), (1, 3), (2, 3))  # xy, xz, yz, xt, yt, zt


class HexPlaneDeformation(nn.Module):
    """4DGaussians' HexPlane field: per level, six planes (C, R_a, R_b); features = prod over planes of the bilinear
    samples, concatenated over levels -> MLP decoder -> offsets. Space is normalised by ``bound``, time to [-1, 1]."""

    def __init__(
        self,
        channels: int = 16,
        resolutions: tuple[int, ...] = (32, 64),
        time_resolution: int = 25,
        width: int = 64,
        bound: float = 1.5,
    ) -> None:
        super().__init__()
        self.bound = bound
        self.planes = nn.ParameterList()
        for res in resolutions:
            for _, b in _PLANES:
                size = (time_resolution if b == 3 else res, res)  # grid (rows: axis b, cols: axis a)
                init = torch.ones(1, channels, *size) if b == 3 else torch.empty(1, channels, *size).uniform_(0.1, 0.5)
                self.planes.append(nn.Parameter(init))
        self.levels = len(resolutions)
        self.decoder = nn.Sequential(nn.Linear(channels * self.levels, width), nn.ReLU())
        self.heads = _Heads(width)

    def forward(self, means: Tensor, t: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        xyzt = torch.cat([(means / self.bound).clamp(-1, 1), (t * 2 - 1).expand(len(means), 1)], dim=-1)
        feats = []
        for level in range(self.levels):
            f = 1.0
            for p, (a, b) in enumerate(_PLANES):
                grid = xyzt[:, (a, b)][None, :, None, :]  # (1, N, 1, 2), x = col (axis a), y = row (axis b)
                plane = self.planes[level * len(_PLANES) + p]
                f = f * F.grid_sample(plane, grid, align_corners=True)[0, :, :, 0].t()  # (N, C)
            feats.append(f)
        return self.heads(self.decoder(torch.cat(feats, dim=-1)))


class TrajectoryDeformation(nn.Module):
    """Per-Gaussian trajectories: dx(t) = sum_k b_k tau^k (k = 1..degree) + sum_f (a_f sin(2 pi f t) + c_f cos(2 pi f t)
    - c_f), dq(t) = omega tau, with tau = t - 0.5; parameters (N, ...) all start at zero."""

    def __init__(self, num: int, degree: int = 3, frequencies: int = 2) -> None:
        super().__init__()
        self.degree, self.frequencies = degree, frequencies
        self.poly = nn.Parameter(torch.zeros(num, degree, 3))
        self.fourier = nn.Parameter(torch.zeros(num, 2 * frequencies, 3))
        self.omega = nn.Parameter(torch.zeros(num, 4))

    def forward(self, means: Tensor, t: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        tau = t.reshape(()) - 0.5
        powers = tau ** torch.arange(1, self.degree + 1, device=means.device, dtype=means.dtype)
        f = 2 * math.pi * torch.arange(1, self.frequencies + 1, device=means.device, dtype=means.dtype) * t.reshape(())
        basis = torch.cat([torch.sin(f), torch.cos(f) - 1.0])
        dx = torch.einsum("k,nkc->nc", powers, self.poly) + torch.einsum("k,nkc->nc", basis, self.fourier)
        return dx, self.omega * tau, torch.zeros_like(means)


class DynamicGaussians(nn.Module):
    """One deformation expert: canonical Gaussians + its deformation; ``forward(t)`` -> :class:`GaussianState` at t."""

    def __init__(self, kind: str, num_gaussians: int, sh_degree: int = 1, extent: float = 1.3, **kwargs) -> None:
        super().__init__()
        if kind not in EXPERTS:
            raise ConfigError(f"expert={kind!r}: choose one of {', '.join(EXPERTS)}")
        self.kind = kind
        self.gaussians = CanonicalGaussians(num_gaussians, sh_degree, extent)
        if kind == "mlp":
            self.deform = MLPDeformation(**kwargs)
        elif kind == "hexplane":
            self.deform = HexPlaneDeformation(**kwargs)
        else:
            self.deform = TrajectoryDeformation(num_gaussians, **kwargs)

    def forward(self, t: Tensor, static: bool = False) -> GaussianState:
        """The Gaussians at time ``t``; ``static``: the canonical Gaussians, the deformation skipped (warm-up)."""
        g = self.gaussians.state()
        if static:
            return g
        dx, dq, ds = self.deform(g.means, t.reshape(1, 1).to(g.means))
        return GaussianState(g.means + dx, g.quats + dq, g.scales * torch.exp(ds), g.opacities, g.sh)
