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

import torch

from zoo.errors import ConfigError
from zoo.task_module import MoETaskModule, StepLoss
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


class DistillGS(MoETaskModule):
    """Student expert trained on a frozen MoE-GS teacher's renders.

    Args:
        teacher: MoE-GS router export (name or ``.pt`` path), as written by ``MoEGS(export_name=...)``.
        student: the teacher's expert to distil into (``"mlp"``, ``"hexplane"``, ``"trajectory"``); None: the one
            whose stage-1 export has the best ``val_psnr``.
        gt_weight: weight of the ground-truth loss beside the teacher loss.
        lr_means, lr, ssim_weight, backend: as :class:`~zoo_tasks.splatting.module.ExpertGS`.
    """

    synced_stages = ("val", "test")

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

    def step_loss(self, batch) -> StepLoss:
        """L1 + SSIM of the student's render against the teacher's blend (+ ``gt_weight`` x against the image)."""
        view = unbatch(batch)
        with torch.no_grad():
            target = self.teacher.blend(view)[0]
        pred = self.render(self.student, view)
        loss = image_loss(pred, target, self.hparams.ssim_weight)
        if self.hparams.gt_weight:
            loss = loss + self.hparams.gt_weight * image_loss(pred, view["image"], self.hparams.ssim_weight)
        return StepLoss(loss, {}, {"loss": loss}, 1)

    def _log(self, stage: str, suffix: str, pred: torch.Tensor, view: dict) -> None:
        metrics = image_metrics(pred, view["image"])
        self.log_metrics(stage, {f"{metric}{suffix}": value for metric, value in metrics.items()}, 1)

    def evaluate(self, batch, batch_idx: int, stage: str, dataloader_idx: int = 0) -> dict:
        """PSNR / SSIM of the student; at test time also of the expert before distillation and of the teacher."""
        view = unbatch(batch)
        self._log(stage, "", self.render(self.student, view), view)
        if stage == "test":
            self._log(stage, "_before", self.render(self.before, view), view)
            self._log(stage, "_teacher", self.teacher.blend(view)[0], view)
        return {}

    def extra_results(self) -> dict:
        return {"student": self.student_name, "lpips": "not computed (no weights)"}

    def configure_optimizers(self):
        lr = {**DEFAULT_LR, **(self.hparams.lr or {})}
        return torch.optim.Adam(expert_param_groups(self.student, self.hparams.lr_means, lr), eps=1e-15)
