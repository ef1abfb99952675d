"""One detection sample and the checks every loader runs on its samples.

A `Sample` is one image (or one aligned RGB + IR pair) with its axis-aligned boxes in pixels and class names.
`check_samples` turns the three input faults a user can make into one clear ``ConfigError`` each: a missing
image file, a class name outside the task's classes, a box outside the image (or of zero size).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from zoo.errors import ConfigError

TASKS = ("rgb", "ir", "rgbir")


@dataclass(frozen=True)
class Sample:
    """An image of one task with its boxes.

    Attributes:
        image: file path, or an (H, W, 3) uint8 array (the synthetic set); for ``task == "rgbir"`` the RGB image.
        boxes: (N, 4) float32 ``x_min, y_min, x_max, y_max`` in pixels of the stored image.
        labels: N class names.
        width, height: size of the stored image in pixels.
        task: one of ``TASKS``.
        image_id: unique within its dataset (used by the COCO metric).
        ir_image: the aligned infrared image of an ``rgbir`` pair (path or array), else None.
        labelled: False for pairs without boxes (LLVIP): inference only.
    """

    image: Path | np.ndarray
    boxes: np.ndarray
    labels: tuple[str, ...]
    width: int
    height: int
    task: str
    image_id: int
    ir_image: Path | np.ndarray | None = None
    labelled: bool = True
    name: str = field(default="")
    crop: tuple[int, int, int, int] | None = None  # (x0, y0, x1, y1) cut from the file at load (DroneVehicle border)


def clip_boxes(boxes: np.ndarray, width: int, height: int, tolerance: float) -> np.ndarray:
    """Clip boxes that overshoot the image by at most ``tolerance`` pixels (annotation rounding); others stay."""
    boxes = boxes.copy()
    over = (
        (boxes[:, [0, 1]] >= -tolerance).all(1)
        & (boxes[:, 2] <= width + tolerance)
        & (boxes[:, 3] <= height + tolerance)
    )
    boxes[over] = np.clip(boxes[over], 0, [width, height, width, height])
    return boxes


def check_samples(samples: list[Sample], classes: tuple[str, ...], source: str) -> list[Sample]:
    """Raise one ``ConfigError`` naming the file and the fault for the first bad sample; return the samples."""
    known = set(classes)
    for s in samples:
        for image in (s.image, s.ir_image):
            if isinstance(image, Path) and not image.is_file():
                raise ConfigError(f"{source}: image {image} is missing")
        where = s.name or str(s.image_id)
        for label in s.labels:
            if label not in known:
                raise ConfigError(f"{source}: {where} has unknown class {label!r}; valid: {', '.join(classes)}")
        if len(s.boxes) != len(s.labels):
            raise ConfigError(f"{source}: {where} has {len(s.boxes)} boxes but {len(s.labels)} labels")
        for box in s.boxes:
            x0, y0, x1, y1 = (float(v) for v in box)
            if x0 < 0 or y0 < 0 or x1 > s.width or y1 > s.height:
                raise ConfigError(
                    f"{source}: {where} has a box outside the {s.width}x{s.height} image: "
                    f"[{x0:g}, {y0:g}, {x1:g}, {y1:g}] (x_min, y_min, x_max, y_max)"
                )
            if x1 <= x0 or y1 <= y0:
                raise ConfigError(f"{source}: {where} has an empty box [{x0:g}, {y0:g}, {x1:g}, {y1:g}]")
    return samples
