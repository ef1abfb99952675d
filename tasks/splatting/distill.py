"""MoE-GS distillation: the blended mixture (frozen teacher) distilled into one of its experts (the student).

The student starts as a copy of a stage-1 expert -- by default the one with the best validation PSNR in its export,
"the best single expert" -- and is fine-tuned on the teacher's blended renders of the training views (L1 + SSIM;
``gt_weight`` > 0 mixes in the ground-truth loss). The test logs the student after (``test/psnr``), the same expert
before distillation (``test/psnr_before``) and the teacher (``test/psnr_teacher``).
"""

from __future__ import annotations

import copy
import inspect
import math

import pytorch_lightning as pl
import torch

from zoo.errors import ConfigError
from zoo_tasks.splatting.exports import load_export, recorded_scene, scene_of
from zoo_tasks.splatting.module import DEFAULT_LR, expert_param_groups
from zoo_tasks.splatting.moe import MoEGS
from zoo_tasks.splatting.objective import image_loss, image_metrics, render_view, unbatch

_SKIP = ("export_name", "prune_fractions", "prune_score_views")


def load_teacher(entry: str) -> tuple[MoEGS, list[str]]:
    """A trained MoE-GS from its router export (its experts from their own exports), frozen, and its expert entries."""
    blob, path = load_export(entry)
    accepted = set(inspect.signature(MoEGS.__init__).parameters) - {"self", *_SKIP}
    teacher = MoEGS(**{k: v for k, v in blob["hparams"].items() if k in accepted})
    teacher.router.load_state_dict(blob["state_dict"])
    teacher.export_scenes.insert(0, ("MoE-GS teacher", path, recorded_scene(blob, path)))
    return teacher.requires_grad_(False), list(blob["hparams"]["experts"])


class DistillGS(pl.LightningModule):
    """Student expert trained on a frozen MoE-GS teacher's renders.

    Args:
        teacher: MoE-GS router export (name or ``.pt`` path), as written by ``MoEGS(export_name=...)``.
        student: the teacher's expert to distil into (``"mlp"``, ``"hexplane"``, ``"trajectory"``); None: the one
            whose stage-1 export has the best ``val_psnr``.
        gt_weight: weight of the ground-truth loss beside the teacher loss.
        lr_means, lr, ssim_weight, backend: as :class:`~zoo_tasks.splatting.module.ExpertGS`.
    """

    def __init__(
        self,
        teacher: str = "standup_moe_gs",
        student: str | None = None,
        gt_weight: float = 0.0,
        lr_means: float = 1.6e-4,
        lr: dict[str, float] | None = None,
        ssim_weight: float = 0.2,
        backend: str = "auto",
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.teacher, entries = load_teacher(teacher)
        names = self.teacher.expert_names
        if student is None:
            scores = [load_export(e)[0].get("val_psnr", float("nan")) for e in entries]
            scores = [-math.inf if math.isnan(s) else s for s in scores]
            index = max(range(len(names)), key=lambda k: scores[k])
        elif student in names:
            index = names.index(student)
        else:
            raise ConfigError(f"student={student!r}: the teacher's experts are {', '.join(names)} (or null: the best)")
        self.student_name = names[index]
        self.student = copy.deepcopy(self.teacher.experts[index]).requires_grad_(True)
        self.before = copy.deepcopy(self.teacher.experts[index]).requires_grad_(False)

    def train(self, mode: bool = True):
        super().train(mode)
        self.teacher.eval()
        return self

    def setup(self, stage: str) -> None:
        self.teacher.check_scene(scene_of(self.trainer.datamodule))  # the teacher and its experts: this scene's

    def render(self, model, view: dict) -> torch.Tensor:
        return render_view(model(view["time"]), view, backend=self.hparams.backend)[0]

    def training_step(self, batch, batch_idx: int) -> dict:
        view = unbatch(batch)
        with torch.no_grad():
            target = self.teacher.blend(view)[0]
        pred = self.render(self.student, view)
        loss = image_loss(pred, target, self.hparams.ssim_weight)
        if self.hparams.gt_weight:
            loss = loss + self.hparams.gt_weight * image_loss(pred, view["image"], self.hparams.ssim_weight)
        self.log("train/loss", loss, prog_bar=True, batch_size=1)
        return {"loss": loss}

    def _log(self, name: str, pred: torch.Tensor, view: dict) -> None:
        for metric, value in image_metrics(pred, view["image"]).items():
            self.log(name.format(metric), value, on_epoch=True, sync_dist=True, batch_size=1)

    def validation_step(self, batch, batch_idx: int) -> dict:
        view = unbatch(batch)
        self._log("val/{}", self.render(self.student, view), view)
        return {}

    def test_step(self, batch, batch_idx: int) -> dict:
        view = unbatch(batch)
        self._log("test/{}", self.render(self.student, view), view)
        self._log("test/{}_before", self.render(self.before, view), view)
        self._log("test/{}_teacher", self.teacher.blend(view)[0], view)
        return {}

    def extra_results(self) -> dict:
        return {"student": self.student_name, "lpips": "not computed (no weights)"}

    def configure_optimizers(self):
        lr = {**DEFAULT_LR, **(self.hparams.lr or {})}
        return torch.optim.Adam(expert_param_groups(self.student, self.hparams.lr_means, lr), eps=1e-15)
