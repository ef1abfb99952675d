"""Readers: one function per on-disk format, each returning checked `Sample` lists (no torch, no mmdet).

- `read_hit_uav`: HIT-UAV's COCO-*like* json (key ``annotation``, images' ``filename``); thermal, 640x512 grey.
  ``DontCare`` boxes are dropped (not masked), as several codebases do; the four other classes are kept.
- `read_yolo_folder`: ``images/<stem>.jpg`` + ``labels/<stem>.txt`` (YOLO, normalised centre/size), e.g.
  DroneViewVehicle-RGB; boxes overshooting the edge by <= 1 px (rounding, 195 of its 1,630 boxes) are clipped.
- `read_llvip_pairs`: aligned visible/infrared pairs with no labels (inference path only).
- `read_dronevehicle`: DroneVehicle's layout (``<split>/<split>img``, ``<split>imgr``, ``<split>labelr``: VOC xml
  with polygons), the RGB-IR benchmark a user with that data can run; the 100 px white border is cut off.
- `synthetic_pairs`: a generated, labelled RGB + IR set (SYNTHETIC: for the two-stream training test only).
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
from PIL import Image

from zoo.errors import ConfigError, DatasetNotFoundError
from zoo_tasks.detection.samples import Sample, check_samples, clip_boxes

HIT_UAV_CLASSES = ("Person", "Car", "Bicycle", "OtherVehicle")
HIT_UAV_IGNORED = ("DontCare",)
DRONEVEHICLE_CLASSES = ("car", "truck", "bus", "van", "freight_car")
# spellings found in DroneVehicle's xml files
DRONEVEHICLE_ALIASES = {
    "feright car": "freight_car",
    "feright_car": "freight_car",
    "freight car": "freight_car",
    "feright": "freight_car",
    "truvk": "truck",
}


def _natural_key(stem: str) -> list:
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", stem)]


def read_hit_uav(
    root: Path, json_file: str = "normal_json/annotations/test.json", image_dir: str = "normal_json/test"
) -> list[Sample]:
    """HIT-UAV samples sorted by image id (task ``ir``)."""
    path = Path(root) / json_file
    if not path.is_file():
        raise DatasetNotFoundError(f"HIT-UAV: annotation file {path} is missing")
    data = json.loads(path.read_text())
    anns = data.get("annotation", data.get("annotations"))
    if anns is None or "images" not in data or "categories" not in data:
        raise ConfigError(f"{path}: expected keys 'images', 'categories' and 'annotation(s)'")
    names = {c["id"]: c["name"] for c in data["categories"]}
    per_image: dict[int, list] = {}
    for a in anns:
        per_image.setdefault(a["image_id"], []).append(a)
    samples = []
    for im in sorted(data["images"], key=lambda i: i["id"]):
        boxes, labels = [], []
        for a in per_image.get(im["id"], []):
            name = names.get(a["category_id"], str(a["category_id"]))
            if name in HIT_UAV_IGNORED:
                continue
            x, y, w, h = a["bbox"]
            boxes.append([x, y, x + w, y + h])
            labels.append(name)
        file_name = im.get("file_name", im.get("filename"))
        samples.append(
            Sample(
                Path(root) / image_dir / file_name,
                np.asarray(boxes, np.float32).reshape(-1, 4),
                tuple(labels),
                int(im["width"]),
                int(im["height"]),
                "ir",
                int(im["id"]),
                name=file_name,
            )
        )
    return check_samples(samples, HIT_UAV_CLASSES, str(path))


def read_yolo_folder(
    root: Path, classes: tuple[str, ...], task: str = "rgb", stems: list[str] | None = None, tolerance: float = 1.0
) -> list[Sample]:
    """``images/<stem>.jpg`` + ``labels/<stem>.txt`` in natural frame order (``stems`` keeps a given order)."""
    root = Path(root)
    if stems is None:
        stems = sorted((p.stem for p in (root / "images").glob("*.jpg")), key=_natural_key)
    if not stems:
        raise DatasetNotFoundError(f"{root}: no images/<stem>.jpg files")
    samples = []
    for i, stem in enumerate(stems):
        image, label_file = root / "images" / f"{stem}.jpg", root / "labels" / f"{stem}.txt"
        if not image.is_file():
            raise ConfigError(f"{root}: image {image} is missing")
        if not label_file.is_file():
            raise ConfigError(f"{root}: label file {label_file} is missing (an image with no boxes needs an empty one)")
        with Image.open(image) as im:
            width, height = im.size
        rows = [line.split() for line in label_file.read_text().splitlines() if line.strip()]
        if any(len(r) != 5 for r in rows):
            raise ConfigError(f"{label_file}: every line must be 'class x_center y_center width height'")
        ids = [int(r[0]) for r in rows]
        bad = [c for c in ids if not 0 <= c < len(classes)]
        if bad:
            raise ConfigError(
                f"{label_file}: unknown class id {bad[0]}; valid: 0..{len(classes) - 1} ({', '.join(classes)})"
            )
        xywh = np.asarray([[float(v) for v in r[1:]] for r in rows], np.float32).reshape(-1, 4)
        xywh *= [width, height, width, height]
        boxes = np.concatenate([xywh[:, :2] - xywh[:, 2:] / 2, xywh[:, :2] + xywh[:, 2:] / 2], 1)
        samples.append(
            Sample(
                image,
                clip_boxes(boxes, width, height, tolerance),
                tuple(classes[c] for c in ids),
                width,
                height,
                task,
                i,
                name=stem,
            )
        )
    return check_samples(samples, classes, str(root))


def _unlabelled_pair(rgb: Path, ir: Path, index: int, name: str) -> Sample:
    """An aligned RGB + IR pair without boxes (task ``rgbir``), sized from its RGB image."""
    with Image.open(rgb) as im:
        width, height = im.size
    return Sample(
        rgb, np.zeros((0, 4), np.float32), (), width, height, "rgbir", index, ir_image=ir, labelled=False, name=name
    )


def read_llvip_pairs(root: Path) -> list[Sample]:
    """The 45 aligned pairs: ``FusionGAN/{Train,Test}_LLVIP_{vi,ir}/<id>.jpg`` and
    ``imagefusion_densefuse/datasets/<id>_{vi,ir}.jpg`` (task ``rgbir``, no labels)."""
    root = Path(root)
    samples = []
    for part in ("Train", "Test"):
        for vi in sorted((root / "FusionGAN" / f"{part}_LLVIP_vi").glob("*.jpg")):
            ir = root / "FusionGAN" / f"{part}_LLVIP_ir" / vi.name
            samples.append(_unlabelled_pair(vi, ir, len(samples), f"{part}/{vi.stem}"))
    demo = root / "imagefusion_densefuse" / "datasets"
    for vi in sorted(demo.glob("*_vi.jpg")):
        ir = demo / vi.name.replace("_vi.jpg", "_ir.jpg")
        samples.append(_unlabelled_pair(vi, ir, len(samples), f"densefuse/{vi.stem[:-3]}"))
    if not samples:
        raise DatasetNotFoundError(f"{root}: no FusionGAN/*_LLVIP_vi/*.jpg pairs")
    return check_samples(samples, (), str(root))


def _voc_boxes(xml_file: Path) -> tuple[list[list[float]], list[str]]:
    boxes, labels = [], []
    for obj in ET.parse(xml_file).getroot().iter("object"):
        name = (obj.findtext("name") or "").strip()
        name = DRONEVEHICLE_ALIASES.get(name, name)
        poly, box = obj.find("polygon"), obj.find("bndbox")
        if poly is not None:
            xs = [float(poly.findtext(f"x{i}")) for i in range(1, 5)]
            ys = [float(poly.findtext(f"y{i}")) for i in range(1, 5)]
            boxes.append([min(xs), min(ys), max(xs), max(ys)])
        elif box is not None:
            boxes.append([float(box.findtext(k)) for k in ("xmin", "ymin", "xmax", "ymax")])
        else:
            raise ConfigError(f"{xml_file}: object {name!r} has neither <polygon> nor <bndbox>")
        labels.append(name)
    return boxes, labels


def read_dronevehicle(root: Path, split: str = "train", border: int = 100, labels_from: str = "ir") -> list[Sample]:
    """DroneVehicle (Sun et al. 2022) RGB-IR pairs of ``split``: ``<split>/<split>img/*.jpg`` (RGB),
    ``<split>imgr`` (IR), ``<split>labelr`` (IR labels, default) or ``<split>label`` (RGB labels).

    The 840x712 images carry a ``border``-px white frame: it is cut off (640x512 left) and boxes are shifted
    and clipped to the cut image; boxes left with no area are dropped.
    """
    base = Path(root) / split
    rgb_dir, ir_dir = base / f"{split}img", base / f"{split}imgr"
    label_dir = base / (f"{split}labelr" if labels_from == "ir" else f"{split}label")
    for folder in (rgb_dir, ir_dir, label_dir):
        if not folder.is_dir():
            raise DatasetNotFoundError(
                f"DroneVehicle: folder {folder} is missing (layout: <split>/<split>img, <split>imgr, <split>labelr)"
            )
    samples = []
    for rgb in sorted(rgb_dir.glob("*.jpg"), key=lambda p: _natural_key(p.stem)):
        xml_file = label_dir / f"{rgb.stem}.xml"
        if not xml_file.is_file():
            raise ConfigError(f"DroneVehicle: label file {xml_file} is missing")
        with Image.open(rgb) as im:
            width, height = im.size
        raw, labels = _voc_boxes(xml_file)
        w, h = width - 2 * border, height - 2 * border
        boxes = np.asarray(raw, np.float32).reshape(-1, 4) - border
        boxes = np.clip(boxes, 0, [w, h, w, h])
        keep = (boxes[:, 2] > boxes[:, 0]) & (boxes[:, 3] > boxes[:, 1])
        samples.append(
            Sample(
                rgb,
                boxes[keep],
                tuple(np.asarray(labels, object)[keep]),
                w,
                h,
                "rgbir",
                len(samples),
                ir_image=ir_dir / rgb.name,
                name=rgb.stem,
                crop=(border, border, width - border, height - border),
            )
        )
    if not samples:
        raise DatasetNotFoundError(f"DroneVehicle: no images in {rgb_dir}")
    return check_samples(samples, DRONEVEHICLE_CLASSES, str(base))


SYNTHETIC_CLASSES = ("car", "person")


def synthetic_pairs(count: int, size: int = 128, seed: int = 0) -> list[Sample]:
    """A SYNTHETIC labelled RGB + IR set (not a benchmark): aligned pairs of rectangles ("car", wide) and
    ellipse-free tall blobs ("person") on noise. Objects are warm in IR; in RGB half of the images are "night"
    (objects barely above the background), so a detector gains from the IR stream. Task ``rgbir``.
    """
    rng = np.random.default_rng(seed)
    samples = []
    for i in range(count):
        night = bool(rng.random() < 0.5)
        rgb = rng.integers(60, 110, (size, size, 3)).astype(np.float32) * (0.3 if night else 1.0)
        ir = rng.integers(20, 50, (size, size, 1)).astype(np.float32).repeat(3, 2)
        boxes, labels = [], []
        for _ in range(int(rng.integers(1, 4))):
            label = SYNTHETIC_CLASSES[int(rng.integers(2))]
            w, h = (rng.integers(size // 6, size // 3), rng.integers(size // 10, size // 6))
            if label == "person":
                w, h = h // 2 + 2, w
            x0, y0 = int(rng.integers(0, size - w)), int(rng.integers(0, size - h))
            colour = rng.integers(120, 255, 3) * (0.35 if night else 1.0)
            rgb[y0 : y0 + h, x0 : x0 + w] = colour
            ir[y0 : y0 + h, x0 : x0 + w] = 200 + rng.integers(0, 55)
            boxes.append([x0, y0, x0 + w, y0 + h])
            labels.append(label)
        samples.append(
            Sample(
                rgb.clip(0, 255).astype(np.uint8),
                np.asarray(boxes, np.float32),
                tuple(labels),
                size,
                size,
                "rgbir",
                i,
                ir_image=ir.clip(0, 255).astype(np.uint8),
                name=f"synthetic-{i}",
            )
        )
    return check_samples(samples, SYNTHETIC_CLASSES, "synthetic RGB-IR pairs")
