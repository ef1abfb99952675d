"""What a trained MoE-GS / deformation expert / distilled student renders (``zoo predict``, ``zoo.api.predict``):
every camera of a split (test by default) at its own time, as PNG files with their PSNR / SSIM against the ground
truth, and a novel-time sequence: one camera of the split at ``frames`` times spread evenly over [0, 1], as a video
(MP4 when imageio-ffmpeg is installed, else a GIF) and a strip of its frames.

Views are rendered exactly as the model's test step renders them on this machine (its ``backend``; ``auto`` is the
tile rasteriser on the CPU, where a loaded run lives) and scored with the task's own metric
(:func:`zoo_tasks.splatting.objective.image_metrics`), so the mean PSNR of a split is its ``test/psnr``. A user's own
scene in the D-NeRF format is ``--data.init_args.path FOLDER``; as in the router stage's test, experts (or a teacher)
trained on another scene are refused.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from zoo.errors import ConfigError
from zoo.predict import Prediction
from zoo.trained import TrainedRun
from zoo_tasks.splatting.dnerf import SPLITS, Views
from zoo_tasks.splatting.exports import scene_of
from zoo_tasks.splatting.objective import image_metrics

STRIP_FRAMES = 8  # frames shown in the sequence's strip picture (evenly chosen); the video has them all

# view -> (the model's image (H, W, 3), {name: another image scored beside it, e.g. each expert alone})
Renderer = Callable[[dict], tuple[Tensor, dict[str, Tensor]]]


def _check_options(split: str, frames: int, fps: int) -> None:
    if split not in SPLITS:
        raise ConfigError(f"--split {split!r}: choose from {', '.join(SPLITS)}")
    if frames < 2:
        raise ConfigError(f"--frames {frames}: the novel-time sequence needs at least 2 frames (times 0 and 1)")
    if fps < 1:
        raise ConfigError(f"--fps {fps}: give at least 1 frame per second")


def _view(views: Views, camera: int, time: Tensor) -> dict:
    """Camera ``camera`` of ``views`` at ``time`` (0-dim), as the test step's unbatched view (its image: the
    ground truth, whose shape sets the render's size)."""
    return {
        "image": views.images[camera],
        "time": time,
        "viewmat": views.viewmats[camera],
        "K": views.K,
        "background": views.background,
    }


def to_uint8(image: Tensor | np.ndarray) -> np.ndarray:
    """(H, W, 3) colours in [0, 1] -> uint8 pixels (rounded), as the PNG files hold them."""
    return np.round(np.clip(np.asarray(image, dtype=np.float32), 0, 1) * 255).astype(np.uint8)


def _png(image: np.ndarray) -> Callable[[Path], None]:
    def draw(path: Path) -> None:
        from PIL import Image

        Image.fromarray(to_uint8(image)).save(path)

    return draw


def video_format() -> str:
    """``"mp4"`` when imageio-ffmpeg is installed (imageio writes H.264 through it), else ``"gif"``."""
    return "mp4" if importlib.util.find_spec("imageio_ffmpeg") is not None else "gif"


def _video(sequence: np.ndarray, fps: int) -> Callable[[Path], None]:
    """``draw(path)`` of (F, H, W, 3) frames as an MP4 or a looping GIF (by the path's suffix)."""

    def draw(path: Path) -> None:
        pixels = to_uint8(sequence)
        if path.suffix == ".mp4":
            import imageio.v2 as imageio

            # H.264 (yuv420p) needs even sides: repeat the last row / column where a side is odd
            h, w = pixels.shape[1:3]
            pixels = np.pad(pixels, ((0, 0), (0, h % 2), (0, w % 2), (0, 0)), mode="edge")
            imageio.mimwrite(path, list(pixels), fps=fps, macro_block_size=1)
            return
        from PIL import Image

        first, *rest = (Image.fromarray(frame) for frame in pixels)
        first.save(path, save_all=True, append_images=rest, duration=round(1000 / fps), loop=0)

    return draw


def _strip(sequence: np.ndarray, times: np.ndarray, camera: int, split: str) -> Callable[[Path], None]:
    """``draw(path)`` of up to ``STRIP_FRAMES`` frames of the sequence in one row, each titled with its time."""

    def draw(path: Path) -> None:
        from zoo.utils.figures import pyplot, save_figure

        plt = pyplot()
        shown = np.unique(np.linspace(0, len(sequence) - 1, min(STRIP_FRAMES, len(sequence))).round().astype(int))
        fig, axes = plt.subplots(1, len(shown), figsize=(1.8 * len(shown), 2.1), squeeze=False)
        for ax, i in zip(axes[0], shown):
            ax.imshow(to_uint8(sequence[i]))
            ax.set_title(f"t = {times[i]:.2f}", fontsize=8)
            ax.axis("off")
        fig.suptitle(f"{split} camera {camera} over time", fontsize=9)
        save_figure(fig, path, dpi=120)

    return draw


def render_split(render: Renderer, views: Views, split: str) -> tuple[np.ndarray, list[dict]]:
    """Every view of ``views`` rendered at its own time: images (N, H, W, 3) in [0, 1] and one metrics row per view
    (``index, file, name, time, psnr, ssim`` and ``psnr_<name>, ssim_<name>`` of each extra image)."""
    images, rows = [], []
    for i in range(len(views)):
        view = _view(views, i, views.times[i])
        image, extras = render(view)
        row = {"index": i, "file": f"{split}_{i:03d}.png", "name": views.names[i], "time": float(views.times[i])}
        for suffix, pred in {"": image, **{f"_{n}": x for n, x in extras.items()}}.items():
            row.update({f"{metric}{suffix}": float(v) for metric, v in image_metrics(pred, view["image"]).items()})
        images.append(image.clamp(0, 1).numpy())
        rows.append(row)
    return np.stack(images), rows


def render_sequence(render: Renderer, views: Views, camera: int, frames: int) -> tuple[np.ndarray, np.ndarray]:
    """Camera ``camera`` at ``frames`` times evenly spread over [0, 1]: images (F, H, W, 3) in [0, 1], times (F,)."""
    times = torch.linspace(0, 1, frames)
    images = [render(_view(views, camera, t))[0].clamp(0, 1).numpy() for t in times]
    return np.stack(images), times.numpy()


def predict_views(
    run: TrainedRun, render: Renderer, what: str, split: str, camera: int, frames: int, fps: int
) -> Prediction:
    """The shared body of the predictors below: the split's views, the sequence, and their files."""
    views = run.datamodule.split(split)
    if not 0 <= camera < len(views):
        raise ConfigError(f"--camera {camera}: the {split} split has {len(views)} cameras (0-{len(views) - 1})")
    images, rows = render_split(render, views, split)
    sequence, times = render_sequence(render, views, camera, frames)
    video = f"sequence.{video_format()}"
    pictures = {row["file"]: _png(image) for row, image in zip(rows, images)}
    pictures[video] = _video(sequence, fps)
    pictures["sequence_strip.png"] = _strip(sequence, times, camera, split)
    psnr, ssim = np.mean([r["psnr"] for r in rows]), np.mean([r["ssim"] for r in rows])
    summary = [
        f"{len(rows)} {split} views of {what} at {views.width}x{views.height} px: mean PSNR {psnr:.2f} dB, "
        f"SSIM {ssim:.4f}",
        f"{split} camera {camera} at {frames} times in [0, 1]: {video}, sequence_strip.png",
    ]
    outputs = {"images": images, "metrics": rows, "sequence": sequence, "sequence_times": times, "camera": camera}
    return Prediction(outputs=outputs, tables={"metrics": rows}, pictures=pictures, summary=summary)


def predict_moe_gs(
    run: TrainedRun, split: str = "test", camera: int = 0, frames: int = 24, fps: int = 12
) -> Prediction:
    """MoE-GS's per-pixel blend of its frozen experts for every view of the split, with PSNR / SSIM of the blend and
    of each expert alone (``psnr_<expert>``), and a novel-time sequence of one camera.

    Args:
        split: the views to render: train, val or test.
        camera: the split's camera (index) of the novel-time sequence.
        frames: times of the sequence, spread evenly over [0, 1] (at least 2).
        fps: frames per second of the sequence's video.
    """
    _check_options(split, frames, fps)
    model = run.model
    run.datamodule.split(split)  # a missing or malformed scene fails here, before its content hash
    model.check_scene(scene_of(run.datamodule))

    def render(view: dict) -> tuple[Tensor, dict[str, Tensor]]:
        image, rgb, _ = model.blend(view)
        return image, {name: rgb[:, :, k] for k, name in enumerate(model.expert_names)}

    what = f"the MoE-GS blend of {', '.join(model.expert_names)}"
    return predict_views(run, render, what, split, camera, frames, fps)


def predict_expert(
    run: TrainedRun, split: str = "test", camera: int = 0, frames: int = 24, fps: int = 12
) -> Prediction:
    """One stage-1 deformation expert's render of every view of the split with its PSNR / SSIM, and a novel-time
    sequence of one camera.

    Args:
        split: the views to render: train, val or test.
        camera: the split's camera (index) of the novel-time sequence.
        frames: times of the sequence, spread evenly over [0, 1] (at least 2).
        fps: frames per second of the sequence's video.
    """
    _check_options(split, frames, fps)
    model = run.model
    return predict_views(
        run, lambda view: (model.render(view), {}), f"the {model.hparams.expert} expert", split, camera, frames, fps
    )


def predict_distilled(
    run: TrainedRun, split: str = "test", camera: int = 0, frames: int = 24, fps: int = 12
) -> Prediction:
    """The distilled student's render of every view of the split with its PSNR / SSIM and the same expert's before
    distillation (``psnr_before``), and a novel-time sequence of one camera.

    Args:
        split: the views to render: train, val or test.
        camera: the split's camera (index) of the novel-time sequence.
        frames: times of the sequence, spread evenly over [0, 1] (at least 2).
        fps: frames per second of the sequence's video.
    """
    _check_options(split, frames, fps)
    model = run.model
    run.datamodule.split(split)  # a missing or malformed scene fails here, before its content hash
    model.teacher.check_scene(scene_of(run.datamodule))

    def render(view: dict) -> tuple[Tensor, dict[str, Tensor]]:
        return model.render(model.student, view), {"before": model.render(model.before, view)}

    what = f"the student distilled into the {model.student_name} expert"
    return predict_views(run, render, what, split, camera, frames, fps)


PREDICTORS = {"MoEGS": predict_moe_gs, "ExpertGS": predict_expert, "DistillGS": predict_distilled}
