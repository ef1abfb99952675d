"""D-NeRF scene reader: ``transforms_{train,val,test}.json`` + RGBA PNGs, one time per frame.

Format (Pumarola et al., D-NeRF, CVPR 2021; the Blender/NeRF-synthetic schema with a ``time`` key)::

    {"camera_angle_x": 0.691,
     "frames": [{"file_path": "./train/r_000", "time": 0.0, "transform_matrix": [[...4 floats...] x 4]}, ...]}

``file_path`` is relative to the scene folder, without extension (``.png`` is appended when absent);
``transform_matrix`` is camera-to-world in the OpenGL convention (x right, y up, looking along -z), converted here
to gsplat's OpenCV world-to-camera ``viewmat``. The alpha channel is composited onto a white or black background.
A NaN or infinite time or camera-matrix entry is refused (:func:`zoo.data.finite.require_finite`), naming the file,
the key and the frame.

:func:`scene_sha256` identifies a scene by its content (the transforms files and the images they name), so that
stage-1 expert exports can record which scene they were trained on.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from zoo.data.finite import require_finite
from zoo.data.resolve import sha256_of
from zoo.errors import ConfigError, DatasetNotFoundError

SPLITS = ("train", "val", "test")
BACKGROUNDS = {"white": 1.0, "black": 0.0}


@dataclass
class Views:
    """The frames of one split.

    Attributes:
        images: (N, H, W, 3) float in [0, 1], composited onto ``background``.
        times: (N,) float, the frame times (D-NeRF: normalised to [0, 1]).
        viewmats: (N, 4, 4) world-to-camera, OpenCV convention (x right, y down, looking along +z).
        K: (3, 3) pinhole intrinsics at the loaded resolution.
        background: (3,) the background colour the images were composited onto.
        names: the frames' ``file_path``.
    """

    images: Tensor
    times: Tensor
    viewmats: Tensor
    K: Tensor
    background: Tensor
    names: list[str]

    @property
    def height(self) -> int:
        return int(self.images.shape[1])

    @property
    def width(self) -> int:
        return int(self.images.shape[2])

    def __len__(self) -> int:
        return int(self.images.shape[0])


def _bad(path: Path, what: str) -> ConfigError:
    return ConfigError(f"malformed D-NeRF transforms file {path}: {what}")


def read_transforms(path: Path) -> tuple[float, list[dict]]:
    """``camera_angle_x`` and the checked frame list of one transforms file.

    Raises:
        DatasetNotFoundError: the file is missing.
        ConfigError: not JSON, or a key is missing / has the wrong type (the message names file, frame and key).
    """
    if not path.is_file():
        raise DatasetNotFoundError(f"D-NeRF scene: {path} is missing (need transforms_{{train,val,test}}.json)")
    try:
        meta = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise _bad(path, f"not valid JSON ({exc})") from None
    if not isinstance(meta, dict):
        raise _bad(path, "the top level must be an object with 'camera_angle_x' and 'frames'")
    angle = meta.get("camera_angle_x")
    if not isinstance(angle, (int, float)) or not 0 < angle < math.pi:
        raise _bad(path, f"'camera_angle_x' must be a number in (0, pi), got {angle!r}")
    frames = meta.get("frames")
    if not isinstance(frames, list) or not frames:
        raise _bad(path, "'frames' must be a non-empty list")
    for i, frame in enumerate(frames):
        if not isinstance(frame, dict):
            raise _bad(path, f"frames[{i}] is not an object")
        for key in ("file_path", "time", "transform_matrix"):
            if key not in frame:
                raise _bad(path, f"frames[{i}] has no {key!r}")
        if not isinstance(frame["file_path"], str):
            raise _bad(path, f"frames[{i}]['file_path'] must be a string")
        if not isinstance(frame["time"], (int, float)) or isinstance(frame["time"], bool):
            raise _bad(path, f"frames[{i}]['time'] must be a number, got {frame['time']!r}")
        matrix = np.asarray(frame["transform_matrix"], dtype=object)
        if matrix.shape != (4, 4) or not all(isinstance(v, (int, float)) for v in matrix.ravel()):
            raise _bad(path, f"frames[{i}]['transform_matrix'] must be a 4x4 list of numbers")
    _require_finite_poses(path, frames)
    return float(angle), frames


_POSE_COLUMNS = ["time"] + [f"transform_matrix[{r}][{c}]" for r in range(4) for c in range(4)]


def _require_finite_poses(path: Path, frames: list[dict]) -> None:
    """JSON allows NaN / Infinity: one line naming the file, the key and the frame (its index in 'frames')."""
    values = np.array(
        [[float(f["time"]), *np.asarray(f["transform_matrix"], dtype=np.float64).ravel()] for f in frames]
    )
    require_finite(
        values,
        path,
        _POSE_COLUMNS,
        rows="frame index",
        first_row=0,
        fix="give every frame a finite 'time' and camera-to-world 'transform_matrix'",
    )


def _image_path(scene: Path, file_path: str) -> Path:
    path = scene / file_path
    return path if path.suffix.lower() == ".png" else path.with_name(path.name + ".png")


def load_image(path: Path, downscale: int, background: float) -> np.ndarray:
    """(H/downscale, W/downscale, 3) float32 RGB of an RGB(A) image, area-downscaled then alpha-composited."""
    from PIL import Image

    if not path.is_file():
        raise DatasetNotFoundError(f"D-NeRF scene: image {path} named in the transforms file is missing")
    with Image.open(path) as im:
        im = im.convert("RGBA")
        if downscale > 1:
            im = im.resize((im.width // downscale, im.height // downscale), Image.Resampling.BOX)
        rgba = np.asarray(im, dtype=np.float32) / 255.0
    rgb, alpha = rgba[..., :3], rgba[..., 3:]
    return rgb * alpha + background * (1.0 - alpha)


def scene_sha256(scene: str | Path) -> str:
    """sha256 identifying a D-NeRF-format scene's content: over the name and sha256 of each
    ``transforms_{train,val,test}.json`` and of every image they name (sorted), so the same scene gives the same
    value wherever its folder is (a catalogued scene and a copy of it given as ``path`` alike).

    Raises:
        ConfigError / DatasetNotFoundError: as :func:`read_split` (malformed transforms file, missing file).
    """
    scene = Path(scene)
    files: dict[str, Path] = {}
    for split in SPLITS:
        path = scene / f"transforms_{split}.json"
        _, frames = read_transforms(path)
        files[path.name] = path
        for frame in frames:
            image = _image_path(scene, frame["file_path"])
            if not image.is_file():
                raise DatasetNotFoundError(f"D-NeRF scene: image {image} named in {path} is missing")
            files[Path(os.path.relpath(image, scene)).as_posix()] = image
    lines = "".join(f"{name} {sha256_of(files[name])}\n" for name in sorted(files))
    return hashlib.sha256(lines.encode()).hexdigest()


def camera_to_viewmat(c2w: Tensor) -> Tensor:
    """(..., 4, 4) OpenGL camera-to-world -> OpenCV world-to-camera (flip the camera's y and z axes)."""
    c2w = c2w.clone()
    c2w[..., :3, 1:3] *= -1
    return torch.linalg.inv(c2w)


def read_split(scene: str | Path, split: str, downscale: int = 1, background: str = "white") -> Views:
    """Read one split of a D-NeRF-format scene folder.

    Raises:
        ConfigError: unknown split / background, downscale < 1, malformed transforms file, images of several sizes.
        DatasetNotFoundError: the transforms file or an image is missing.
    """
    if split not in SPLITS:
        raise ConfigError(f"split={split!r}: choose one of {', '.join(SPLITS)}")
    if background not in BACKGROUNDS:
        raise ConfigError(f"background={background!r}: choose one of {', '.join(BACKGROUNDS)}")
    if not isinstance(downscale, int) or downscale < 1:
        raise ConfigError(f"downscale={downscale!r} must be an integer >= 1")
    scene = Path(scene)
    path = scene / f"transforms_{split}.json"
    angle, frames = read_transforms(path)
    bg = BACKGROUNDS[background]
    images = [load_image(_image_path(scene, f["file_path"]), downscale, bg) for f in frames]
    shapes = {im.shape for im in images}
    if len(shapes) > 1:
        raise ConfigError(f"D-NeRF scene {scene}: the images of {path.name} have several sizes {sorted(shapes)}")
    height, width = images[0].shape[:2]
    focal = 0.5 * width / math.tan(0.5 * angle)
    K = torch.tensor([[focal, 0.0, width / 2.0], [0.0, focal, height / 2.0], [0.0, 0.0, 1.0]])
    c2w = torch.tensor([f["transform_matrix"] for f in frames], dtype=torch.float32)
    return Views(
        images=torch.from_numpy(np.stack(images)),
        times=torch.tensor([float(f["time"]) for f in frames]),
        viewmats=camera_to_viewmat(c2w),
        K=K,
        background=torch.full((3,), bg),
        names=[f["file_path"] for f in frames],
    )
