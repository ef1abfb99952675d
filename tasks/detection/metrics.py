"""Per-task COCO box metrics through mmdet's ``CocoMetric`` (AP, AP50, AP_small), fed from plain tensors."""

from __future__ import annotations

import contextlib
import io

import torch


class TaskCocoMetrics:
    """One mmdet ``CocoMetric`` per task (GT given with each sample, no annotation file).

    ``add(task, img_ids, orig_sizes, gt_boxes, gt_labels, preds)``: ground-truth boxes in original-image pixels,
    ``preds`` mmdet ``pred_instances`` (bboxes rescaled to the original image). ``compute()`` returns
    ``{task: {"AP": .., "AP50": .., "AP_small": ..}}`` (COCO mean over IoU 0.5:0.95 and the classes that
    have ground truth in that task; a metric COCO gives as -1, e.g. AP_small where no ground-truth box is
    small, is left out rather than logged as a number).
    """

    def __init__(self, classes: tuple[str, ...]):
        self.classes = classes
        self.metrics: dict = {}
        self.counts: dict[str, int] = {}

    def _metric(self, task: str):
        if task not in self.metrics:
            from mmdet.evaluation import CocoMetric

            metric = CocoMetric(metric="bbox", format_only=False)
            metric.dataset_meta = {"classes": self.classes}
            self.metrics[task], self.counts[task] = metric, 0
        return self.metrics[task]

    def add(self, task: str, img_ids, orig_sizes, gt_boxes, gt_labels, preds) -> None:
        samples = []
        for img_id, size, boxes, labels, pred in zip(img_ids, orig_sizes, gt_boxes, gt_labels, preds):
            instances = [
                {"bbox": b.tolist(), "bbox_label": int(c), "ignore_flag": 0}
                for b, c in zip(boxes.detach().cpu(), labels.detach().cpu())
            ]
            samples.append(
                {
                    "img_id": int(img_id),
                    "ori_shape": tuple(int(v) for v in size),
                    "instances": instances,
                    "pred_instances": {k: pred[k].detach().cpu() for k in ("bboxes", "scores", "labels")},
                }
            )
        self._metric(task).process({}, samples)
        self.counts[task] += len(samples)

    def compute(self) -> dict[str, dict[str, float]]:
        out = {}
        for task, metric in self.metrics.items():
            if not metric.results:
                continue
            with contextlib.redirect_stdout(io.StringIO()):  # pycocotools prints its summary table
                values = metric.compute_metrics(metric.results)
            metric.results.clear()
            out[task] = {
                name: float(values[f"bbox_{key}"])
                for name, key in (("AP", "mAP"), ("AP50", "mAP_50"), ("AP_small", "mAP_s"))
            }
            out[task] = {k: v for k, v in out[task].items() if v >= 0}  # COCO's -1: no GT box of that size
        return out

    def reset(self) -> None:
        self.metrics, self.counts = {}, {}


def to_original(boxes: list[torch.Tensor], scale: list[tuple[float, float]]) -> list[torch.Tensor]:
    """Boxes in resized-input pixels -> original-image pixels."""
    return [b / b.new_tensor([sx, sy, sx, sy]) for b, (sx, sy) in zip(boxes, scale)]
