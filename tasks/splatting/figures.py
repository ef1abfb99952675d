"""Test-view figures: renders of every method side by side, and the per-pixel expert-weight map."""

from __future__ import annotations

import os

import numpy as np
from torch import Tensor

from zoo.utils.figures import pyplot, save_figure

EXPERT_COLOURS = np.array([[0.89, 0.10, 0.11], [0.22, 0.49, 0.72], [0.30, 0.69, 0.29], [0.60, 0.31, 0.64]])


def side_by_side(images: dict[str, Tensor], path: str | os.PathLike, title: str = "") -> str:
    """One row of (H, W, 3) images named by their keys (ground truth, each method)."""
    plt = pyplot()
    fig, axes = plt.subplots(1, len(images), figsize=(2.4 * len(images), 2.6), squeeze=False)
    for ax, (name, image) in zip(axes[0], images.items(), strict=True):
        ax.imshow(image.detach().cpu().clamp(0, 1).numpy())
        ax.set_title(name, fontsize=8)
        ax.axis("off")
    if title:
        fig.suptitle(title, fontsize=9)
    return save_figure(fig, path)


def weight_map(weights: Tensor, names: list[str], path: str | os.PathLike) -> str:
    """Per-pixel expert weights (H, W, E): one grey map per expert and their blend in one colour per expert."""
    plt = pyplot()
    w = weights.detach().cpu().numpy()
    blend = np.clip(w @ EXPERT_COLOURS[: w.shape[-1]], 0, 1)
    fig, axes = plt.subplots(1, w.shape[-1] + 1, figsize=(2.4 * (w.shape[-1] + 1), 2.6), squeeze=False)
    for k, name in enumerate(names):
        axes[0, k].imshow(w[..., k], vmin=0, vmax=1, cmap="gray")
        axes[0, k].set_title(f"G'_{name}", fontsize=8)
        axes[0, k].axis("off")
    axes[0, -1].imshow(blend)
    axes[0, -1].set_title("blend (" + "/".join(f"{n}" for n in names) + " = r/b/g)", fontsize=7)
    axes[0, -1].axis("off")
    return save_figure(fig, path)
