"""What every splatting model shares: render a Gaussian state into a view, the L1 + SSIM loss, PSNR / SSIM.

Loss: ``(1 - lambda) L1 + lambda (1 - SSIM)`` with lambda = 0.2 (3DGS, and MoE-GS's router stage). Metrics use
torchmetrics (PSNR with data range 1, SSIM with an 11x11 Gaussian window). LPIPS is not computed: its network
weights are not available offline.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor
from torchmetrics.functional.image import peak_signal_noise_ratio, structural_similarity_index_measure

from zoo_tasks.splatting.gaussians import GaussianState
from zoo_tasks.splatting.render import render, sh_colors


def unbatch(batch: dict) -> dict:
    """A batch of one view (the datamodule's batch_size=1) -> that view's tensors without the batch axis."""
    return {k: v[0] if isinstance(v, Tensor) and v.dim() > 0 else v for k, v in batch.items()}


def render_view(
    state: GaussianState, view: dict, extra: Tensor | None = None, backend: str = "auto", **raster_kwargs
) -> tuple[Tensor, Tensor | None, Tensor]:
    """Render ``state`` into ``view`` (unbatched): rgb (H, W, 3), the splatted ``extra`` channels (H, W, E) (None
    without), alpha (H, W, 1). Extra channels composite onto 0."""
    height, width = view["image"].shape[:2]
    colors = sh_colors(state.means, state.sh, view["viewmat"], degree=int(round(state.sh.shape[1] ** 0.5)) - 1)
    background = view["background"].to(colors)
    if extra is not None:
        colors = torch.cat([colors, extra], dim=-1)
        background = torch.cat([background, background.new_zeros(extra.shape[-1])])
    out, alpha = render(
        state.means, state.quats, state.scales, state.opacities, colors, view["viewmat"], view["K"], width, height,
        background=background, backend=backend, **raster_kwargs,
    )  # fmt: skip
    return out[..., :3], (out[..., 3:] if extra is not None else None), alpha


def _nchw(image: Tensor) -> Tensor:
    return image.permute(2, 0, 1)[None]


def ssim(pred: Tensor, target: Tensor) -> Tensor:
    """SSIM of two (H, W, 3) images in [0, 1] (differentiable)."""
    return structural_similarity_index_measure(_nchw(pred), _nchw(target), data_range=1.0)


def image_loss(pred: Tensor, target: Tensor, ssim_weight: float = 0.2) -> Tensor:
    """(1 - w) L1 + w (1 - SSIM) of two (H, W, 3) images."""
    return (1 - ssim_weight) * F.l1_loss(pred, target) + ssim_weight * (1 - ssim(pred, target))


@torch.no_grad()
def image_metrics(pred: Tensor, target: Tensor) -> dict[str, Tensor]:
    """PSNR (dB) and SSIM of a (H, W, 3) render, clamped to [0, 1], against the ground truth."""
    pred = pred.clamp(0, 1)
    return {
        "psnr": peak_signal_noise_ratio(_nchw(pred), _nchw(target), data_range=1.0),
        "ssim": ssim(pred, target),
    }
