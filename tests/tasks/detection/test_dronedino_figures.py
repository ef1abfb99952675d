"""Detections figure: written as a PNG with the image, GT and predictions above the score threshold."""

from __future__ import annotations

import torch
from PIL import Image

from zoo_tasks.detection.figures import draw_detections


def test_draw_detections_writes_a_png(tmp_path):
    image = torch.zeros(3, 32, 32, dtype=torch.uint8)
    gt = torch.tensor([[2.0, 2.0, 10.0, 12.0]])
    pred = torch.tensor([[2.0, 2.0, 11.0, 12.0], [20.0, 20.0, 30.0, 30.0]])
    path = draw_detections(image, gt, pred, torch.tensor([0.9, 0.1]), ["car", "car"], "rgb", tmp_path / "d" / "f.png")
    with Image.open(path) as im:
        assert im.format == "PNG" and im.size[0] > 100
