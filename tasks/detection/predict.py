"""What a trained DroneDINO / DINO detects (``zoo predict``, ``zoo.api.predict``): the boxes of every image of a split
of the run's tasks, as a COCO detection file (``detections.json``: ``images``, ``categories`` and ``annotations``
with ``bbox`` [x, y, w, h] in the image's own pixels and ``score``, which pycocotools and FiftyOne open), the ground
truth in the same form (``ground_truth.json``), the task's COCO AP per task, and the first images drawn with their
boxes.

Images go through the model exactly as in its test step (the datamodule's evaluation batches, mmdet's
``predict(rescale=True)``: boxes mapped back to the original image), and AP is the task's own metric
(:class:`zoo_tasks.detection.metrics.TaskCocoMetrics`) over every prediction, as ``test/<task>/AP``;
``score_threshold`` only filters what the files list and draw. A user's own images in a task's format are
``--data.init_args.hit_uav_dir`` / ``rgb_dir`` / ``dronevehicle_dir``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from zoo.errors import ConfigError
from zoo.predict import Prediction
from zoo.trained import TrainedRun
from zoo_tasks.detection.data import CLASSES
from zoo_tasks.detection.metrics import TaskCocoMetrics, to_original
from zoo_tasks.detection.samples import Sample
from zoo_tasks.detection.splits import SPLITS

# COCO category ids start at 1 (0 is background in many tools): category_id = index in CLASSES + 1
CATEGORIES = [{"id": i + 1, "name": name, "supercategory": "object"} for i, name in enumerate(CLASSES)]


def _check_options(split: str, score_threshold: float, drawn_images: int) -> None:
    if split not in SPLITS:
        raise ConfigError(f"--split {split!r}: choose from {', '.join(SPLITS)}")
    if not 0 <= score_threshold <= 1:
        raise ConfigError(f"--score_threshold {score_threshold}: give a score in [0, 1]")
    if drawn_images < 0:
        raise ConfigError(f"--drawn_images {drawn_images}: give a number of images >= 0")


def coco_box(xyxy: list[float]) -> list[float]:
    """``[x_min, y_min, x_max, y_max]`` -> COCO's ``[x, y, width, height]``."""
    x0, y0, x1, y1 = xyxy
    return [x0, y0, x1 - x0, y1 - y0]


def _image_entry(coco_id: int, sample: Sample, task: str) -> dict[str, Any]:
    """A COCO ``images`` entry: the file's path (absolute where the image is a file), size, task and dataset id."""
    entry = {
        "id": coco_id,
        "file_name": str(Path(sample.image).resolve()) if isinstance(sample.image, Path) else sample.name,
        "width": sample.width,
        "height": sample.height,
        "task": task,
        "dataset_image_id": sample.image_id,
    }
    if isinstance(sample.ir_image, Path):
        entry["ir_file_name"] = str(sample.ir_image.resolve())
    return entry


def _annotations(coco_id: int, boxes: torch.Tensor, labels: torch.Tensor, scores: torch.Tensor | None) -> list[dict]:
    """COCO ``annotations`` of one image: boxes (N, 4) xyxy in original pixels, labels (N,), scores (N,) or None."""
    out = []
    for k, (box, label) in enumerate(zip(boxes.tolist(), labels.tolist())):
        bbox = coco_box(box)
        ann = {"image_id": coco_id, "category_id": int(label) + 1, "bbox": bbox, "area": bbox[2] * bbox[3]}
        ann["iscrowd"] = 0
        if scores is not None:
            ann["score"] = float(scores[k])
        out.append(ann)
    return out


def _document(description: str, images: list[dict], annotations: list[dict]) -> dict[str, Any]:
    """A COCO file: numbered annotations (ids from 1) beside the images and categories."""
    numbered = [{"id": i + 1, **ann} for i, ann in enumerate(annotations)]
    return {"info": {"description": description}, "images": images, "categories": CATEGORIES, "annotations": numbered}


def _drawing(image, gt_boxes, pred, scale, title: str, threshold: float) -> Callable[[Path], None]:
    """``draw(path)`` of one resized image (3, S, S) with its ground truth and predictions above ``threshold``."""
    sx, sy = scale
    boxes = pred.bboxes * torch.tensor([sx, sy, sx, sy])  # original -> resized pixels, as the image is drawn
    names = [CLASSES[int(c)] for c in pred.labels]

    def draw(path: Path) -> None:
        from zoo_tasks.detection.figures import draw_detections

        draw_detections(image, gt_boxes, boxes, pred.scores, names, title, path, min_score=threshold)

    return draw


def _quiet(compute: Callable[[], Any]) -> Any:
    """``compute()`` without the INFO lines mmdet's CocoMetric logs (a prediction prints its own summary)."""
    import logging

    from mmengine.logging import MMLogger

    logger = MMLogger.get_current_instance()
    level = logger.level
    logger.setLevel(logging.WARNING)
    try:
        return compute()
    finally:
        logger.setLevel(level)


def predict_detections(
    run: TrainedRun, split: str = "test", score_threshold: float = 0.3, drawn_images: int = 4
) -> Prediction:
    """Boxes, classes and scores on every image of the split of the run's tasks, as COCO files, with the COCO AP
    per task, and the first images drawn with their ground truth (green) and detections (red).

    Args:
        split: the images to detect in: train, val or test (the datamodule's splits of each task).
        score_threshold: detections scoring below it are left out of the files and drawings (not out of the AP).
        drawn_images: how many images (the first, tasks taken in turn) are drawn with their boxes.
    """
    _check_options(split, score_threshold, drawn_images)
    model, datamodule = run.model, run.datamodule
    # the datamodule's evaluation batches (every image once, in order, no augmentation) for any split
    loader = datamodule._loader(split, shuffle=False)
    samples = {(t, s.image_id): s for t in datamodule.tasks for s in datamodule.samples(t, split)}
    metrics = TaskCocoMetrics(CLASSES)
    images, found, truth, pictures = [], [], [], {}
    for batch in loader:
        x, mm_samples = model.mmdet_inputs(batch)
        preds = [p.pred_instances.cpu() for p in model.detector.predict(x, mm_samples, rescale=True)]
        gt = to_original(batch["boxes"], batch["scale"])
        metrics.add(batch["task"], batch["image_ids"], batch["orig_sizes"], gt, batch["labels"], preds)
        for i, pred in enumerate(preds):
            coco_id = len(images) + 1
            sample = samples[(batch["task"], batch["image_ids"][i])]
            images.append(_image_entry(coco_id, sample, batch["task"]))
            keep = pred.scores >= score_threshold
            found += _annotations(coco_id, pred.bboxes[keep], pred.labels[keep], pred.scores[keep])
            truth += _annotations(coco_id, gt[i], batch["labels"][i], None)
            if len(pictures) < drawn_images:
                title = f"{batch['task']} {Path(images[-1]['file_name']).name}"
                draw = _drawing(batch["images"][i], batch["boxes"][i], pred, batch["scale"][i], title, score_threshold)
                pictures[f"detections_{len(pictures):02d}.png"] = draw
    ap = _quiet(metrics.compute)
    what = f"DINO (moe: {model.hparams.moe}) on the {split} split of {', '.join(datamodule.tasks)}"
    detections = _document(f"{what}: detections with score >= {score_threshold}", images, found)
    ground_truth = _document(f"{what}: ground truth", images, truth)
    summary = [f"{len(images)} images of the {split} split: {len(found)} detections with score >= {score_threshold}"]
    summary += [
        f"{task}: " + ", ".join(f"{name} {value:.4f}" for name, value in values.items()) for task, values in ap.items()
    ]
    outputs = {"detections": detections, "ground_truth": ground_truth, "metrics": ap}
    documents = {"detections": detections, "ground_truth": ground_truth}
    return Prediction(outputs=outputs, documents=documents, pictures=pictures, summary=summary)


PREDICTORS = {"DroneDINOModule": predict_detections}
