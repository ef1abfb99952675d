"""Render 3D Gaussians for one camera: gsplat's PyTorch projection / covariance / SH, then a rasteriser by device.

Projection (EWA splatting of Zwicker et al. 2001 as in 3DGS) and spherical harmonics come from
``gsplat.cuda._torch_impl`` on every device. The rasteriser: gsplat's CUDA ``rasterization`` kernel when the
tensors are on a CUDA device and gsplat's CUDA extension loads, else :func:`zoo_tasks.splatting.raster.rasterize_tiles`.

Shapes: means (N, 3), quats (N, 4) wxyz (normalised here), scales (N, 3) (linear, positive), opacities (N,),
features (N, C) (already colours / extra channels) -- or SH coefficients (N, K, 3) with ``sh_degree`` set;
viewmat (4, 4) world-to-camera (OpenCV); K (3, 3). Returns colours (H, W, C) and alpha (H, W, 1).
"""

from __future__ import annotations

from functools import cache

import torch
from torch import Tensor

from zoo.errors import ConfigError
from zoo_tasks.splatting.raster import rasterize_dense, rasterize_tiles

BACKENDS = ("auto", "tiles", "dense", "gsplat_cuda")


@cache
def gsplat_cuda_available() -> bool:
    """True when torch sees a GPU and gsplat's CUDA rasteriser can be imported."""
    if not torch.cuda.is_available():
        return False
    try:
        from gsplat.cuda._backend import _C  # noqa: F401
        from gsplat.rendering import rasterization  # noqa: F401
    except Exception:  # noqa: BLE001 - a missing or unbuilt extension means "use the torch rasteriser"
        return False
    return _C is not None


def choose_backend(backend: str, device: torch.device, cuda_ok: bool | None = None) -> str:
    """The rasteriser for tensors on ``device``: ``"auto"`` -> gsplat's CUDA kernel on a CUDA device (when it loads),
    else the tile rasteriser. ``cuda_ok`` overrides the availability probe (tests)."""
    if backend not in BACKENDS:
        raise ConfigError(f"backend={backend!r}: choose one of {', '.join(BACKENDS)}")
    cuda_ok = gsplat_cuda_available() if cuda_ok is None else cuda_ok
    if backend == "auto":
        return "gsplat_cuda" if torch.device(device).type == "cuda" and cuda_ok else "tiles"
    if backend == "gsplat_cuda" and not (torch.device(device).type == "cuda" and cuda_ok):
        raise ConfigError("backend='gsplat_cuda' needs CUDA tensors and gsplat's CUDA extension; use 'auto' or 'tiles'")
    return backend


def project(means: Tensor, quats: Tensor, scales: Tensor, viewmat: Tensor, K: Tensor, width: int, height: int):
    """gsplat's torch EWA projection for one camera: (radii (N, 2) int, means2d (N, 2), depths (N,), conics (N, 3))."""
    from gsplat.cuda._torch_impl import _fully_fused_projection, _quat_scale_to_covar_preci

    covars, _ = _quat_scale_to_covar_preci(quats, scales, compute_preci=False, triu=False)
    radii, means2d, depths, conics, _ = _fully_fused_projection(means, covars, viewmat[None], K[None], width, height)
    return radii[0], means2d[0], depths[0], conics[0]


def sh_colors(means: Tensor, sh: Tensor, viewmat: Tensor, degree: int) -> Tensor:
    """(N, K, 3) SH coefficients seen from the camera -> (N, 3) colours, ``max(SH(dir) + 0.5, 0)`` as in gsplat."""
    from gsplat.cuda._torch_impl import _spherical_harmonics

    campos = torch.linalg.inv(viewmat)[:3, 3]
    return torch.clamp_min(_spherical_harmonics(degree, means - campos, sh) + 0.5, 0.0)


def render(
    means: Tensor,
    quats: Tensor,
    scales: Tensor,
    opacities: Tensor,
    features: Tensor,
    viewmat: Tensor,
    K: Tensor,
    width: int,
    height: int,
    background: Tensor | None = None,
    sh_degree: int | None = None,
    backend: str = "auto",
    **raster_kwargs,
) -> tuple[Tensor, Tensor]:
    """Render one camera (see the module docstring); ``raster_kwargs`` go to the torch rasteriser."""
    quats = torch.nn.functional.normalize(quats, dim=-1)
    chosen = choose_backend(backend, means.device)
    if chosen == "gsplat_cuda":
        from gsplat.rendering import rasterization

        colors, alphas, _ = rasterization(
            means, quats, scales, opacities, features, viewmat[None], K[None], width, height,
            sh_degree=sh_degree, backgrounds=None if background is None else background[None],
        )  # fmt: skip
        return colors[0], alphas[0]
    colors = sh_colors(means, features, viewmat, sh_degree) if sh_degree is not None else features
    radii, means2d, depths, conics = project(means, quats, scales, viewmat, K, width, height)
    raster = rasterize_tiles if chosen == "tiles" else rasterize_dense
    return raster(means2d, conics, opacities, colors, depths, radii, width, height, background, **raster_kwargs)
