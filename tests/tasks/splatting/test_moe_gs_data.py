"""D-NeRF reader and datamodule: the real standup scene, user scenes, and one clear error per bad input."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
from PIL import Image
from zoo_testing import need_dataset

from zoo.errors import ConfigError, DatasetNotFoundError
from zoo_tasks.splatting.data import DNeRFDataModule
from zoo_tasks.splatting.dnerf import camera_to_viewmat, read_split


def _write_scene(root, frames=2, size=8):
    root.mkdir(parents=True, exist_ok=True)
    for split in ("train", "val", "test"):
        (root / split).mkdir(exist_ok=True)
        entries = []
        for i in range(frames):
            rgba = np.zeros((size, size, 4), np.uint8)
            rgba[: size // 2, :, 0] = 255  # opaque red top half, transparent bottom half
            rgba[: size // 2, :, 3] = 255
            Image.fromarray(rgba, "RGBA").save(root / split / f"r_{i:03d}.png")
            c2w = np.eye(4)
            c2w[2, 3] = 4.0
            time = i / max(frames - 1, 1)
            entries.append({"file_path": f"./{split}/r_{i:03d}", "time": time, "transform_matrix": c2w.tolist()})
        (root / f"transforms_{split}.json").write_text(json.dumps({"camera_angle_x": 0.69, "frames": entries}))
    return root


def test_user_scene_background_downscale_and_intrinsics(tmp_path):
    scene = _write_scene(tmp_path / "s")
    white = read_split(scene, "train", downscale=2, background="white")
    black = read_split(scene, "train", downscale=2, background="black")
    assert white.images.shape == (2, 4, 4, 3)
    assert torch.allclose(white.images[0, 0, 0], torch.tensor([1.0, 0.0, 0.0]))
    assert torch.allclose(white.images[0, -1, 0], torch.ones(3))
    assert torch.allclose(black.images[0, -1, 0], torch.zeros(3))
    assert torch.allclose(white.times, torch.tensor([0.0, 1.0]))
    assert white.K[0, 0].item() == pytest.approx(0.5 * 4 / math.tan(0.5 * 0.69))
    # a camera at z=4 looking down -z (OpenGL) sees the origin at depth +4 in OpenCV camera coordinates
    origin = white.viewmats[0] @ torch.tensor([0.0, 0.0, 0.0, 1.0])
    assert origin[2].item() == pytest.approx(4.0)


def test_camera_to_viewmat_inverts_with_axis_flip():
    c2w = torch.eye(4)
    c2w[:3, 3] = torch.tensor([1.0, 2.0, 3.0])
    view = camera_to_viewmat(c2w)
    assert torch.allclose(view @ torch.tensor([1.0, 2.0, 2.0, 1.0]), torch.tensor([0.0, 0.0, 1.0, 1.0]))


@pytest.mark.parametrize(
    ("edit", "needle"),
    [
        (lambda m: m.pop("camera_angle_x"), "camera_angle_x"),
        (lambda m: m["frames"][1].pop("time"), "frames[1] has no 'time'"),
        (lambda m: m["frames"][0].__setitem__("transform_matrix", [[1, 0], [0, 1]]), "4x4"),
        (lambda m: m.__setitem__("frames", []), "'frames'"),
    ],
)
def test_malformed_transforms_name_the_key(tmp_path, edit, needle):
    scene = _write_scene(tmp_path / "s")
    path = scene / "transforms_train.json"
    meta = json.loads(path.read_text())
    edit(meta)
    path.write_text(json.dumps(meta))
    with pytest.raises(ConfigError, match="transforms_train.json") as info:
        read_split(scene, "train")
    assert needle in str(info.value)


def test_invalid_json_and_missing_image(tmp_path):
    scene = _write_scene(tmp_path / "s")
    (scene / "transforms_val.json").write_text("{not json")
    with pytest.raises(ConfigError, match="not valid JSON"):
        read_split(scene, "val")
    (scene / "test" / "r_001.png").unlink()
    with pytest.raises(DatasetNotFoundError, match="r_001.png"):
        read_split(scene, "test")


def test_bad_options(tmp_path):
    scene = _write_scene(tmp_path / "s")
    with pytest.raises(ConfigError, match="background"):
        read_split(scene, "train", background="grey")
    with pytest.raises(ConfigError, match="downscale"):
        read_split(scene, "train", downscale=0)
    with pytest.raises(ConfigError, match="scene='nope'.*standup"):
        DNeRFDataModule(scene="nope").scene_folder()


def test_datamodule_user_path_items_and_sha(tmp_path):
    dm = DNeRFDataModule(path=str(_write_scene(tmp_path / "s")), downscale=1)
    dm.setup()
    batch = next(iter(dm.test_dataloader()))
    assert batch["image"].shape == (1, 8, 8, 3) and batch["viewmat"].shape == (1, 4, 4)
    assert "train/r_000.png" in dm.data_sha256()


def test_standup_scene_from_the_mirror():
    need_dataset("D-NeRF", files=["standup"])
    dm = DNeRFDataModule(scene="standup", downscale=16)
    train, test = dm.split("train"), dm.split("test")
    assert len(train) == 150 and len(test) == 20
    assert train.images.shape[1:] == (50, 50, 3)
    assert train.times[0] == 0 and train.times[-1] == 1 and bool((train.times.diff() > 0).all())
    assert 0.0 <= float(train.images.min()) and float(train.images.max()) <= 1.0
    # every camera sits ~4.03 from the origin (D-NeRF's sphere)
    centres = torch.linalg.inv(train.viewmats)[:, :3, 3]
    assert torch.allclose(centres.norm(dim=-1), torch.full((150,), 4.031), atol=0.01)


def _set_time(meta, value):
    meta["frames"][1]["time"] = value


def _set_pose(meta, value):
    meta["frames"][1]["transform_matrix"][2][3] = value


@pytest.mark.parametrize(
    ("edit", "value", "where"),
    [
        (_set_time, float("nan"), "first: NaN in column 'time', frame index 1"),
        (_set_pose, float("inf"), "first: inf in column 'transform_matrix[2][3]', frame index 1"),
        (_set_pose, float("-inf"), "first: -inf in column 'transform_matrix[2][3]', frame index 1"),
    ],
)
def test_a_non_finite_time_or_camera_matrix_is_refused_naming_file_key_and_frame(tmp_path, edit, value, where):
    """JSON readers accept NaN / Infinity; a D-NeRF pose or time that is not finite is refused in one line
    (zoo.data.finite.require_finite), before it can render as NaN."""
    scene = _write_scene(tmp_path / "s")
    path = scene / "transforms_val.json"
    meta = json.loads(path.read_text())
    edit(meta, value)
    path.write_text(json.dumps(meta))  # writes NaN / Infinity / -Infinity, as Python's json does
    with pytest.raises(ConfigError) as info:
        DNeRFDataModule(path=str(scene)).setup()
    message = str(info.value)
    assert message.startswith(f"{path}: 1 value(s) are not finite (") and where in message and "\n" not in message
