"""The DroneDINO LightningModule: mmdet's DINO (per-task, unified dense, unified top-k MoE, DroneDINO), trained with
``zoo fit``; the device comes from the Trainer (mmdet's detector is an ordinary ``nn.Module`` inside).

Methods by config (all mmdet's DINO, built from its config via the registry; see ``dino_config``):
- ``moe: none``: DINO's dense FFNs (per-task DINO when ``data.tasks`` has one task; unified dense DINO else);
- ``moe: topk``: unified top-k MoE DINO, dynamic experts only (``HeteroMoEFFN(shared=False, task_specific=False)``);
- ``moe: hetero``: DroneDINO: shared + task-specific + dynamic experts; ``aux_weights["task_recognition"]``
  weights the task-recognition loss (0 = the "without task-recognition" ablation).

The step protocol, the aux-loss rule and the logging calls are ``zoo.task_module.MoETaskModule``'s; this module
keeps DINO's loss, its COCO evaluation and its optimiser groups. Routings are ``{"encoder.i" / "decoder.i": Routing}``.
Metrics (mmdet's CocoMetric per task): ``{stage}/{task}/AP``, ``AP50``, ``AP_small``, and ``{stage}/mAP`` (mean AP
over the tasks). Backbones start from scratch unless ``backbone_weights`` names a local state dict.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import pytorch_lightning as pl
import torch
from torch import Tensor

from zoo.callbacks.periodic_checkpoint import PeriodicCheckpoint
from zoo.errors import ConfigError
from zoo.moe import ROUTERS
from zoo.task_module import MoETaskModule, StepLoss
from zoo_tasks.detection.data import CLASSES
from zoo_tasks.detection.metrics import TaskCocoMetrics, to_original
from zoo_tasks.detection.samples import TASKS

MOE_KINDS = ("none", "topk", "hetero")
# ImageNet statistics (timm / mmdet defaults) for RGB; IR images are grey replicated to 3 channels and use the same.
MEAN = (123.675, 116.28, 103.53)
STD = (58.395, 57.12, 57.375)


def require_mmdet() -> None:
    try:
        import mmcv.ops  # noqa: F401
        import mmdet.models  # noqa: F401
    except ImportError as exc:
        raise ConfigError(
            f"the dronedino task needs mmdet + mmcv with compiled ops ({exc}); run scripts/install_detection.sh"
        ) from None


def _quiet_init_weights(detector) -> None:
    """``init_weights`` without mmengine's one INFO line per parameter."""
    import logging

    from mmengine.logging import MMLogger

    logger = MMLogger.get_current_instance()
    level = logger.level
    logger.setLevel(logging.WARNING)
    try:
        detector.init_weights()
    finally:
        logger.setLevel(level)


class DroneDINOModule(MoETaskModule):
    """mmdet DINO / DroneDINO for RGB, IR and RGB-IR detection (see the module docstring).

    Args:
        num_classes: detector classes (from the data: ``len(CLASSES)`` = 8).
        moe: ``"none"``, ``"topk"`` or ``"hetero"``.
        backbone, backbone_weights, out_indices: timm model name, optional local weights, feature levels.
        embed_dims: transformer width (mmdet 3.3's DINO decoder fixes 256: its sine query embedding has 128 feats).
        ffn_dim, encoder_layers, decoder_layers, num_heads, num_queries, num_dn_queries: DINO sizes.
        num_dynamic, top_k, router, router_kwargs: the routed experts; ``moe_in``: where the MoE blocks go.
        aux_weights: ``zoo.moe`` aux-loss weights, plus ``"task_recognition"``.
        two_stream: a second (IR) backbone and per-level fusion (needed by the ``rgbir`` task).
        lr, backbone_lr, weight_decay, grad_clip: AdamW as mmdet's DINO recipe (backbone lr x 0.1, clip 0.1).
        lr_drop_epochs: epochs after which every learning rate is multiplied by 0.1 (mmdet's 12-epoch DINO
            recipe: ``[11]``); empty: constant.
        checkpoint_every_s: rewrite ``last.ckpt`` this often inside an epoch (``zoo.callbacks.PeriodicCheckpoint``;
            None: at epoch ends only). The training loader's place and every image's augmentation seed go into it,
            so a run stopped mid-epoch resumes to the uninterrupted run's weights.
    """

    checkpoint_monitor = "val/mAP"
    checkpoint_mode = "max"
    synced_stages = ("train", "val", "test")

    def __init__(
        self,
        num_classes: int | None = None,
        moe: str = "hetero",
        backbone: str = "resnet18",
        backbone_weights: str | None = None,
        out_indices: list[int] | None = None,
        embed_dims: int = 256,
        ffn_dim: int = 512,
        encoder_layers: int = 2,
        decoder_layers: int = 2,
        num_heads: int = 8,
        num_queries: int = 100,
        num_dn_queries: int = 50,
        num_dynamic: int = 4,
        top_k: int = 2,
        router: str = "topk",
        router_kwargs: dict[str, Any] | None = None,
        moe_in: list[str] | None = None,
        aux_weights: dict[str, float] | None = None,
        two_stream: bool = False,
        lr: float = 1e-4,
        backbone_lr: float = 1e-5,
        weight_decay: float = 1e-4,
        lr_drop_epochs: list[int] | None = None,
        checkpoint_every_s: float | None = 300.0,
    ):
        super().__init__()
        self.save_hyperparameters()
        if moe not in MOE_KINDS:
            raise ConfigError(f"model.moe={moe!r}; valid: {', '.join(MOE_KINDS)}")
        if router not in ROUTERS:
            raise ConfigError(f"model.router={router!r}; valid: {', '.join(ROUTERS)}")
        require_mmdet()
        from mmdet.registry import MODELS
        from mmdet.utils import register_all_modules

        import zoo_tasks.detection.mm_modules  # noqa: F401  (registers DroneDINO, ZooTimmBackbone, HeteroMoEFFN)
        from zoo_tasks.detection.dino_config import dino_model_config

        register_all_modules(init_default_scope=False)
        moe_cfg = None
        if moe != "none":
            hetero = moe == "hetero"
            moe_cfg = dict(
                type="HeteroMoEFFN",
                num_tasks=len(TASKS),
                num_dynamic=num_dynamic,
                top_k=top_k,
                router=router,
                router_kwargs=router_kwargs,
                shared=hetero,
                task_specific=hetero,
                task_recognition=hetero,
            )
        self.aux_weights = dict(aux_weights if aux_weights is not None else {"load_balance": 0.01})
        if moe != "hetero":
            self.aux_weights.pop("task_recognition", None)
        cfg = dino_model_config(
            num_classes or len(CLASSES),
            backbone,
            backbone_weights,
            tuple(out_indices or (2, 3, 4)),
            embed_dims,
            num_heads,
            ffn_dim,
            encoder_layers,
            decoder_layers,
            num_queries,
            num_dn_queries,
            moe_cfg,
            tuple(moe_in or ("encoder", "decoder")),
            two_stream,
        )
        self.detector = MODELS.build(cfg)
        _quiet_init_weights(self.detector)
        self.register_buffer("mean", torch.tensor(MEAN).view(1, 3, 1, 1), persistent=False)
        self.register_buffer("std", torch.tensor(STD).view(1, 3, 1, 1), persistent=False)
        self.metrics = TaskCocoMetrics(CLASSES)
        self.expert_load: dict[str, dict[str, Tensor]] = defaultdict(dict)  # task -> layer -> (E,) token counts
        self.figures: dict[str, str] = {}  # task -> detections figure of its first test image

    # -- batches ------------------------------------------------------------------------------------------------
    def mmdet_inputs(self, batch: dict) -> tuple[Tensor, list]:
        """Normalised (B, 3 | 6, S, S) inputs and mmdet ``DetDataSample`` s (GT in resized pixels)."""
        from mmdet.structures import DetDataSample
        from mmengine.structures import InstanceData

        x = (batch["images"].float() - self.mean) / self.std
        if batch.get("ir") is not None:
            x = torch.cat([x, (batch["ir"].float() - self.mean) / self.std], 1)
        h, w = x.shape[-2:]
        self._check_tokens(h, w)
        samples = []
        for i in range(x.shape[0]):
            sample = DetDataSample(
                metainfo=dict(
                    img_shape=(h, w),
                    batch_input_shape=(h, w),
                    pad_shape=(h, w),
                    ori_shape=tuple(batch["orig_sizes"][i]),
                    scale_factor=tuple(batch["scale"][i]),
                    img_id=batch["image_ids"][i],
                    task=batch["task"],
                    task_id=batch["task_id"],
                )
            )
            sample.gt_instances = InstanceData(bboxes=batch["boxes"][i].float(), labels=batch["labels"][i].long())
            samples.append(sample)
        return x, samples

    def _check_tokens(self, h: int, w: int) -> None:
        """DINO picks ``num_queries`` encoder tokens: an image too small to have that many is a config error."""
        strides = list(self.detector.backbone.model.feature_info.reduction())
        strides.append(strides[-1] * 2)  # the neck's extra level
        tokens = sum(-(-h // s) * -(-w // s) for s in strides)
        if tokens < self.hparams.num_queries:
            raise ConfigError(
                f"inputs of {h}x{w} (data.image_size, or data.train_crop in training) give {tokens} encoder tokens, "
                f"fewer than model.num_queries={self.hparams.num_queries}: raise the size or lower num_queries"
            )

    def routings(self) -> dict:
        return dict(self.detector.moe_context.routings)

    def step_loss(self, batch: dict) -> StepLoss:
        """DINO's losses (each term's mean, summed, as mmengine's ``parse_losses``) plus the weighted aux losses;
        logs the total, this task's detection loss and, for DroneDINO, the task-recognition loss."""
        x, samples = self.mmdet_inputs(batch)
        losses = self.detector.loss(x, samples)
        # as mmengine's parse_losses: the mean of each term (a list of tensors: the sum of their means)
        terms = {
            k: (sum(t.mean() for t in v) if isinstance(v, list) else v.mean()) for k, v in losses.items() if "loss" in k
        }
        det_loss = sum(terms.values())
        routing = self.routings()
        loss = self.with_aux_loss(det_loss, routing)
        logs = {"loss": loss, f"{batch['task']}/det_loss": det_loss.detach()}
        if "task_recognition" in self.aux_weights and routing:
            tr = torch.stack([r.aux["task_recognition"] for r in routing.values() if "task_recognition" in r.aux])
            logs["task_recognition"] = tr.mean().detach()
        return StepLoss(loss, routing, logs, batch["images"].shape[0])

    # -- evaluation -----------------------------------------------------------------------------------------------
    def evaluate(self, batch: dict, batch_idx: int, stage: str, dataloader_idx: int = 0) -> dict:
        """Add the batch's detections to the COCO metrics (logged at the epoch's end); on test, draw each task's
        first image and count the dynamic experts' load per task."""
        x, samples = self.mmdet_inputs(batch)
        preds = self.detector.predict(x, samples, rescale=True)
        gt = to_original(batch["boxes"], batch["scale"])
        self.metrics.add(
            batch["task"],
            batch["image_ids"],
            batch["orig_sizes"],
            gt,
            batch["labels"],
            [p.pred_instances for p in preds],
        )
        routing = self.routings()
        if stage == "test" and batch["task"] not in self.figures:
            self._draw(batch, preds[0].pred_instances)
        if stage == "test":
            for name, r in routing.items():
                counts = r.expert_counts().detach().cpu()
                prev = self.expert_load[batch["task"]].get(name)
                self.expert_load[batch["task"]][name] = counts if prev is None else prev + counts
        return routing

    def _log_metrics(self, stage: str) -> None:
        results = self.metrics.compute()
        self.metrics.reset()
        values = {f"{task}/{name}": value for task, per_task in results.items() for name, value in per_task.items()}
        if results:
            values["mAP"] = sum(v["AP"] for v in results.values()) / len(results)
        self.log_metrics(stage, values)

    def on_validation_epoch_end(self) -> None:
        self._log_metrics("val")

    def on_test_epoch_start(self) -> None:
        self.expert_load.clear()
        self.figures.clear()

    def _draw(self, batch: dict, pred) -> None:
        """The first test image of each task with its GT and predictions (in resized pixels), into the log folder."""
        folder = getattr(self.trainer, "log_dir", None) if self._trainer is not None else None
        if not folder:
            return
        from zoo_tasks.detection.figures import draw_detections

        sx, sy = batch["scale"][0]
        boxes = pred.bboxes.detach().cpu() * torch.tensor([sx, sy, sx, sy])
        names = [CLASSES[int(c)] for c in pred.labels.cpu()]
        path = f"{folder}/detections_{batch['task']}.png"
        self.figures[batch["task"]] = draw_detections(
            batch["images"][0].cpu(),
            batch["boxes"][0].cpu(),
            boxes,
            pred.scores.detach().cpu(),
            names,
            batch["task"],
            path,
        )

    def on_test_epoch_end(self) -> None:
        self._log_metrics("test")

    def extra_results(self) -> dict:
        """Dynamic-expert load per task (token share per expert, per MoE layer) on the test split, and the paths of
        the detection figures (one per task)."""
        return {
            "expert_load_per_task": {
                task: {name: (c / c.sum().clamp(min=1)).tolist() for name, c in layers.items()}
                for task, layers in self.expert_load.items()
            },
            "detection_figures": dict(self.figures),
        }

    def configure_callbacks(self) -> list[pl.Callback]:
        every = self.hparams.checkpoint_every_s
        return [PeriodicCheckpoint(every)] if every else []

    def configure_optimizers(self):
        backbone = [p for n, p in self.detector.named_parameters() if n.startswith("backbone")]
        ids = {id(p) for p in backbone}
        rest = [p for p in self.detector.parameters() if id(p) not in ids]
        optimizer = torch.optim.AdamW(
            [{"params": rest, "lr": self.hparams.lr}, {"params": backbone, "lr": self.hparams.backbone_lr}],
            weight_decay=self.hparams.weight_decay,
        )
        if not self.hparams.lr_drop_epochs:
            return optimizer
        drop = torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones=list(self.hparams.lr_drop_epochs), gamma=0.1)
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": drop, "interval": "epoch"}}
