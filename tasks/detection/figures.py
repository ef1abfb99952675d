"""Detections drawn on test images: one figure per task (ground truth green, predictions red with scores)."""

from __future__ import annotations

import os

import torch

from zoo.utils.figures import pyplot, save_figure


def draw_detections(
    image: torch.Tensor,
    gt_boxes: torch.Tensor,
    pred_boxes: torch.Tensor,
    scores: torch.Tensor,
    labels: list[str],
    title: str,
    path: str | os.PathLike,
    min_score: float = 0.3,
    max_boxes: int = 30,
) -> str:
    """``image`` (3, H, W) uint8 with boxes (N, 4) xyxy in its pixels; the ``max_boxes`` best predictions above
    ``min_score`` are drawn. Returns the saved path."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5, 5))
    ax.imshow(image.permute(1, 2, 0).cpu().numpy())
    for x0, y0, x1, y1 in gt_boxes.tolist():
        ax.add_patch(plt.Rectangle((x0, y0), x1 - x0, y1 - y0, fill=False, color="lime", linewidth=1))
    keep = (scores >= min_score).nonzero().flatten()[:max_boxes]
    for i in keep.tolist():
        x0, y0, x1, y1 = pred_boxes[i].tolist()
        ax.add_patch(plt.Rectangle((x0, y0), x1 - x0, y1 - y0, fill=False, color="red", linewidth=1))
        ax.text(x0, y0, f"{labels[i]} {scores[i]:.2f}", color="red", fontsize=6)
    ax.set_title(f"{title}: {len(gt_boxes)} GT (green), {len(keep)} predictions >= {min_score} (red)", fontsize=8)
    ax.axis("off")
    return save_figure(fig, path)
