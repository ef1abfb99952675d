"""DroneDINO data: readers on the mirror, the three input checks, the splits, task-homogeneous batches."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image
from zoo_testing import need_dataset

from zoo.errors import ConfigError, DatasetNotFoundError
from zoo_tasks.detection import readers
from zoo_tasks.detection.data import (
    CLASSES,
    DroneDetectionDataModule,
    LLVIPPairs,
    TaskBatchSampler,
    horizontal_flip,
    random_crop,
)
from zoo_tasks.detection.splits import HIT_UAV_RANGES, by_id_range, by_order


def _yolo_folder(tmp_path: Path, lines: list[str], size=(64, 48), image=True) -> Path:
    (tmp_path / "images").mkdir()
    (tmp_path / "labels").mkdir()
    if image:
        Image.new("RGB", size).save(tmp_path / "images" / "f_1.jpg")
    (tmp_path / "labels" / "f_1.txt").write_text("\n".join(lines))
    return tmp_path


def test_hit_uav_reader_and_id_range_split():
    samples = readers.read_hit_uav(need_dataset("HIT-UAV"))
    assert len(samples) == 579
    assert sum(len(s.boxes) for s in samples) == 4811 - 31  # DontCare boxes dropped
    parts = {split: by_id_range(samples, split) for split in HIT_UAV_RANGES}
    assert [len(p) for p in parts.values()] == [405, 58, 116]
    ids = [{s.image_id for s in p} for p in parts.values()]
    assert not (ids[0] & ids[1]) and not (ids[1] & ids[2]) and not (ids[0] & ids[2])
    assert max(ids[0]) < min(ids[1]) and max(ids[1]) < min(ids[2])


def test_drone_view_vehicle_split_keeps_frame_order():
    root = need_dataset("DroneViewVehicle-RGB")
    stems = (root / "selected_stems.txt").read_text().split()
    samples = readers.read_yolo_folder(root, ("car",), stems=stems)
    assert len(samples) == 349 and sum(len(s.boxes) for s in samples) == 1630
    train, val, test = (by_order(samples, split) for split in ("train", "val", "test"))
    assert [s.name for s in train + val + test] == stems  # contiguous blocks, never shuffled
    assert (len(train), len(val), len(test)) == (244, 35, 70)
    assert all((s.boxes >= 0).all() and (s.boxes[:, 2] <= s.width).all() for s in samples)  # 1-px overshoot clipped


def test_box_outside_image_is_one_config_error(tmp_path):
    root = _yolo_folder(tmp_path, ["0 0.95 0.5 0.3 0.2"])  # x_max = 0.95 + 0.15 > 1 by 6 px
    with pytest.raises(ConfigError, match="box outside the 64x48 image"):
        readers.read_yolo_folder(root, ("car",))


def test_unknown_class_is_one_config_error(tmp_path):
    root = _yolo_folder(tmp_path, ["3 0.5 0.5 0.2 0.2"])
    with pytest.raises(ConfigError, match="unknown class id 3; valid: 0..0 \\(car\\)"):
        readers.read_yolo_folder(root, ("car",))
    ann = {
        "images": [{"id": 1, "filename": "a.jpg", "width": 8, "height": 8}],
        "categories": [{"id": 0, "name": "Tank"}],
        "annotation": [{"id": 1, "image_id": 1, "category_id": 0, "bbox": [1, 1, 2, 2]}],
    }
    (tmp_path / "ann.json").write_text(json.dumps(ann))
    (tmp_path / "imgs").mkdir()
    Image.new("L", (8, 8)).save(tmp_path / "imgs" / "a.jpg")
    with pytest.raises(ConfigError, match="unknown class 'Tank'; valid: Person, Car, Bicycle, OtherVehicle"):
        readers.read_hit_uav(tmp_path, "ann.json", "imgs")


def test_missing_image_is_one_config_error(tmp_path):
    ann = {
        "images": [{"id": 1, "filename": "gone.jpg", "width": 8, "height": 8}],
        "categories": [{"id": 0, "name": "Person"}],
        "annotation": [],
    }
    (tmp_path / "ann.json").write_text(json.dumps(ann))
    with pytest.raises(ConfigError, match="image .*gone.jpg is missing"):
        readers.read_hit_uav(tmp_path, "ann.json", "imgs")


def test_dronevehicle_reader_cuts_the_border_and_reads_polygons(tmp_path):
    base = tmp_path / "val"
    for sub in ("valimg", "valimgr", "vallabelr"):
        (base / sub).mkdir(parents=True)
    Image.new("RGB", (840, 712)).save(base / "valimg" / "00001.jpg")
    Image.new("RGB", (840, 712)).save(base / "valimgr" / "00001.jpg")
    poly = "".join(
        f"<x{i}>{x}</x{i}><y{i}>{y}</y{i}>"
        for i, (x, y) in enumerate([(150, 120), (200, 120), (200, 160), (150, 160)], 1)
    )
    xml = f"<annotation><object><name>feright car</name><polygon>{poly}</polygon></object></annotation>"
    (base / "vallabelr" / "00001.xml").write_text(xml)
    [s] = readers.read_dronevehicle(tmp_path, "val")
    assert (s.width, s.height, s.task, s.labels) == (640, 512, "rgbir", ("freight_car",))
    np.testing.assert_allclose(s.boxes, [[50, 20, 100, 60]])
    shutil.rmtree(base / "valimgr")
    with pytest.raises(DatasetNotFoundError, match="valimgr is missing"):
        readers.read_dronevehicle(tmp_path, "val")


def test_llvip_pairs_are_aligned_and_unlabelled():
    pairs = LLVIPPairs(size=64, data_dir=str(need_dataset("LLVIP-pairs")))
    assert len(pairs) == 45
    item = pairs[0]
    assert item["image"].shape == item["ir"].shape == (3, 64, 64) and len(item["boxes"]) == 0


def test_synthetic_pairs_are_labelled_and_deterministic():
    a, b = readers.synthetic_pairs(6, 64, seed=3), readers.synthetic_pairs(6, 64, seed=3)
    assert all(np.array_equal(x.image, y.image) and np.array_equal(x.boxes, y.boxes) for x, y in zip(a, b))
    s = a[0]
    assert s.task == "rgbir" and s.ir_image.shape == s.image.shape == (64, 64, 3) and len(s.boxes) >= 1
    x0, y0, x1, y1 = s.boxes[0].astype(int)
    assert s.ir_image[y0:y1, x0:x1].min() >= 200  # objects are warm in IR


def test_task_sampler_batches_one_task_and_follows_the_mix():
    groups = {"ir": list(range(40)), "rgb": list(range(40, 80))}
    sampler = TaskBatchSampler(groups, batch_size=4, shuffle=True, mix={"ir": 4, "rgb": 1})
    batches = [[i for i, _augment_seed in b] for b in sampler]
    assert len(batches) == len(sampler) == 20
    tasks = ["ir" if b[0] < 40 else "rgb" for b in batches]
    assert all(all((i < 40) == (t == "ir") for i in b) for b, t in zip(batches, tasks))
    assert tasks.count("ir") == 16 and tasks.count("rgb") == 4
    ordered = list(TaskBatchSampler(groups, batch_size=3, shuffle=False, mix=None))
    assert sorted(i for b in ordered for i in b) == list(range(80))  # evaluation sees each image once
    assert ordered[0][0] < 40 <= ordered[1][0]  # and takes the tasks in turn


def test_datamodule_batches_and_errors():
    need_dataset("HIT-UAV")
    dm = DroneDetectionDataModule(tasks=["ir", "rgbir"], image_size=64, batch_size=2, max_images=4, synthetic_pairs=20)
    assert dm.model_shapes() == {"num_classes": len(CLASSES)}
    batches = list(dm.train_dataloader())
    assert {b["task"] for b in batches} == {"ir", "rgbir"}
    for b in batches:
        assert b["images"].shape == (2, 3, 64, 64) and b["images"].dtype == torch.uint8
        assert (b["ir"] is not None) == (b["task"] == "rgbir")
        assert all(box.shape[1] == 4 and (box <= 64).all() for box in b["boxes"])
    with pytest.raises(ConfigError, match="unknown task 'thermal'; valid: rgb, ir, rgbir"):
        DroneDetectionDataModule(tasks=["thermal"])
    with pytest.raises(ConfigError, match="data.mix names task 'rgb'"):
        DroneDetectionDataModule(tasks=["ir"], mix={"rgb": 1.0})


def _item(boxes, size=8):
    """An item whose pixels mark themselves: image[0, y, x] = y * size + x, so a window or a flip can be read back."""
    pixels = torch.arange(size * size).reshape(1, size, size).expand(3, size, size).clone()
    boxes = torch.tensor(boxes, dtype=torch.float32).reshape(-1, 4)
    return {"image": pixels, "ir": pixels + 1, "boxes": boxes, "labels": torch.arange(len(boxes))}


def test_horizontal_flip_mirrors_pixels_and_boxes():
    item = _item([[1, 2, 3, 5]])
    flipped = horizontal_flip(item)
    assert torch.equal(flipped["image"][0, 0], torch.arange(8).flip(0))  # column x -> 7 - x
    assert torch.equal(flipped["ir"], item["ir"].flip(-1))
    assert flipped["boxes"].tolist() == [[5.0, 2.0, 7.0, 5.0]]  # x1, x2 = 8 - 3, 8 - 1
    assert torch.equal(horizontal_flip(flipped)["boxes"], item["boxes"])


def test_random_crop_shifts_clips_and_drops_boxes():
    item = _item([[0, 0, 8, 8], [0, 0, 1, 1], [6, 6, 8, 8]])
    torch.manual_seed(0)
    for _ in range(20):
        out = random_crop(item, 4)
        x0, y0 = int(out["image"][0, 0, 0]) % 8, int(out["image"][0, 0, 0]) // 8  # the window's corner, read back
        assert out["image"].shape == out["ir"].shape == (3, 4, 4)
        assert torch.equal(out["image"], item["image"][:, y0 : y0 + 4, x0 : x0 + 4])
        expected = [
            (label, [max(a - x0, 0), max(b - y0, 0), min(c - x0, 4), min(d - y0, 4)])
            for label, (a, b, c, d) in enumerate(item["boxes"].tolist())
            if min(c - x0, 4) > max(a - x0, 0) and min(d - y0, 4) > max(b - y0, 0)
        ]
        assert out["labels"].tolist() == [label for label, _ in expected]  # the full-image box is always kept
        assert out["boxes"].tolist() == [box for _, box in expected]
    with pytest.raises(ConfigError, match="train_crop=16 is larger than data.image_size=8"):
        random_crop(item, 16)


def test_random_crop_redraws_a_window_without_boxes():
    item = _item([[0, 0, 4, 4]], size=16)  # one box in a corner: 4 in 5 of the 8-px windows miss it
    torch.manual_seed(0)
    redrawn = sum(len(random_crop(item, 8, tries=10)["boxes"]) for _ in range(50))
    torch.manual_seed(0)
    once = sum(len(random_crop(item, 8, tries=1)["boxes"]) for _ in range(50))
    assert once < 20 and redrawn > 35  # expected 10 and 45


def test_training_batches_are_augmented_and_evaluation_batches_are_not():
    need_dataset("HIT-UAV")
    dm = DroneDetectionDataModule(tasks=["ir"], image_size=64, batch_size=2, max_images=4, train_crop=32)
    torch.manual_seed(0)
    train = list(dm.train_dataloader())
    assert all(b["images"].shape == (2, 3, 32, 32) and all((x <= 32).all() for x in b["boxes"]) for b in train)
    plain = DroneDetectionDataModule(tasks=["ir"], image_size=64, batch_size=2, max_images=4, flip=False)
    for a, b in zip(dm.val_dataloader(), plain.val_dataloader()):
        assert torch.equal(a["images"], b["images"]) and all(torch.equal(x, y) for x, y in zip(a["boxes"], b["boxes"]))
    with pytest.raises(ConfigError, match="train_crop must be in"):
        DroneDetectionDataModule(tasks=["ir"], image_size=64, train_crop=128)


def test_training_loader_restored_mid_epoch_serves_the_uninterrupted_batches():
    """The loader's place goes into a checkpoint and every image's flip and crop come from its own seed: a loader
    restored after 3 batches serves the rest of the epoch and the next epoch exactly, augmentations included, and
    the global RNG (which the model's noise draws from) is left alone."""
    need_dataset("HIT-UAV")
    need_dataset("DroneViewVehicle-RGB")

    def loader():
        dm = DroneDetectionDataModule(tasks=["ir", "rgb"], image_size=64, batch_size=2, max_images=6, train_crop=48)
        return dm.train_dataloader()

    torch.manual_seed(0)
    rng_before = torch.get_rng_state()
    first = loader()
    it = iter(first)
    for _ in range(3):
        next(it)
    state = first.state_dict()
    expected = list(it) + list(first)  # the rest of epoch 0, then epoch 1
    assert torch.equal(torch.get_rng_state(), rng_before)

    restored = loader()
    restored.load_state_dict(state)
    got = list(restored) + list(restored)
    assert len(got) == len(expected) == (len(first) - 3) + len(first)
    for a, b in zip(expected, got):
        assert a["task"] == b["task"] and a["image_ids"] == b["image_ids"]
        assert torch.equal(a["images"], b["images"]) and all(torch.equal(x, y) for x, y in zip(a["boxes"], b["boxes"]))
    epoch0, epoch1 = list(loader()), expected[-len(first) :]
    assert [b["image_ids"] for b in epoch0] != [b["image_ids"] for b in epoch1]  # each epoch has its own order


def test_the_training_order_follows_the_runs_seed():
    need_dataset("HIT-UAV")

    def order(run_seed, **kw):
        torch.manual_seed(run_seed)  # what seed_everything does
        dm = DroneDetectionDataModule(tasks=["ir"], image_size=64, batch_size=2, max_images=8, **kw)
        return [b["image_ids"] for b in dm.train_dataloader()]

    assert order(3) == order(3) != order(4)
    assert order(3, seed=7) == order(4, seed=7)  # an explicit data.seed wins
