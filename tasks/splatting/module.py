"""Stage 1: one deformation expert trained alone on a dynamic scene (``zoo fit --config configs/moe_gs/<expert>.yaml``).

Each step renders one training view at its time with the chosen expert and minimises L1 + SSIM (Adam, 3DGS's
per-attribute learning rates). Validation / test log PSNR and SSIM over the split's views; the test writes the first
views' renders beside the ground truth into ``<log dir>/figures/``. No densification or pruning of Gaussians: the
count is fixed (``num_gaussians``).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytorch_lightning as pl
import torch

from zoo.task_module import MoETaskModule, StepLoss
from zoo_tasks.splatting.experts import DynamicGaussians
from zoo_tasks.splatting.exports import export_path, refuse_replacing, save_export, scene_of
from zoo_tasks.splatting.figures import side_by_side
from zoo_tasks.splatting.objective import image_loss, image_metrics, render_view, unbatch

DEFAULT_LR = {"scales": 5e-3, "quats": 1e-3, "opacity": 5e-2, "sh": 2.5e-3, "deform": 8e-4}
FIGURE_VIEWS = 3


def figure_dir(module: pl.LightningModule) -> str:
    """``<log dir>/figures`` of the running trainer (the run folder), else ``./figures``."""
    trainer = module._trainer
    root = (trainer.log_dir or trainer.default_root_dir) if trainer is not None else "."
    return os.path.join(root, "figures")


def build_expert(expert: str, num_gaussians: int, sh_degree: int, expert_kwargs: dict | None) -> DynamicGaussians:
    return DynamicGaussians(expert, num_gaussians, sh_degree, **(expert_kwargs or {}))


def expert_param_groups(model: DynamicGaussians, lr_means: float, lr: dict[str, float]) -> list[dict]:
    """Adam groups: canonical Gaussians per attribute, the deformation at ``lr["deform"]`` (per-Gaussian
    trajectories at ``lr_means``, as they move positions like the means do)."""
    deform_lr = lr_means if model.kind == "trajectory" else lr["deform"]
    return [*model.gaussians.param_groups(lr_means, lr), {"params": list(model.deform.parameters()), "lr": deform_lr}]


class ExpertGS(MoETaskModule):
    """One dynamic-Gaussian expert (see :mod:`zoo_tasks.splatting.experts`) trained on its own.

    Args:
        expert: ``"mlp"`` (Deformable-3DGS), ``"hexplane"`` (4DGaussians) or ``"trajectory"`` (SpacetimeGaussians).
        num_gaussians: fixed number of Gaussians.
        sh_degree: spherical-harmonics degree of the colours.
        expert_kwargs: keyword arguments of the deformation class (widths, resolutions, degrees).
        lr_means: learning rate of the means; ``lr`` the other groups (keys of ``DEFAULT_LR``).
        ssim_weight: lambda of the L1 + SSIM loss.
        deform_warmup_steps: training steps that render the canonical Gaussians with the deformation skipped, so the
            static scene is fitted before anything moves (Deformable-3DGS's ``warm_up``, 3000 of 40k iterations;
            4DGaussians' coarse stage, 3000). Without it the deformation can learn a global shift that carries
            every Gaussian out of frame, since an empty render of a white-background scene is a cheap early loss.
        backend: rasteriser, ``"auto"`` (gsplat CUDA on a GPU, else the tile rasteriser), ``"tiles"``, ``"dense"``.
        export_name: when set, the trained expert is exported for the MoE stage (see
            :mod:`zoo_tasks.splatting.exports`) at the end of fit, with the scene it was trained on; a fit that would
            replace another scene's export of that name is refused at its start.
    """

    synced_stages = ("val", "test")

    def __init__(
        self,
        expert: str = "mlp",
        num_gaussians: int = 5000,
        sh_degree: int = 1,
        expert_kwargs: dict | None = None,
        lr_means: float = 1.6e-3,
        lr: dict[str, float] | None = None,
        ssim_weight: float = 0.2,
        deform_warmup_steps: int = 0,
        backend: str = "auto",
        export_name: str | None = None,
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.model = build_expert(expert, num_gaussians, sh_degree, expert_kwargs)
        self.figures: list[str] = []
        self.scene: dict[str, str] | None = None  # the scene trained on, recorded in the export

    def setup(self, stage: str) -> None:
        if stage != "fit":
            return
        self.scene = scene_of(self.trainer.datamodule)
        if self.hparams.export_name and self.scene is not None:
            new_name = f"{self.scene['name']}_{self.hparams.expert}"
            refuse_replacing(export_path(self.hparams.export_name), self.scene, new_name)

    def render(self, view: dict) -> torch.Tensor:
        static = self.training and self.global_step < self.hparams.deform_warmup_steps
        state = self.model(view["time"], static=static)
        return render_view(state, view, backend=self.hparams.backend)[0]

    def step_loss(self, batch) -> StepLoss:
        """L1 + SSIM of the expert's render of one training view (no mixture: no routing)."""
        view = unbatch(batch)
        loss = image_loss(self.render(view), view["image"], self.hparams.ssim_weight)
        return StepLoss(loss, {}, {"loss": loss}, 1)

    def evaluate(self, batch, batch_idx: int, stage: str, dataloader_idx: int = 0) -> dict:
        """PSNR / SSIM of the view's render; the first test views' renders beside the ground truth."""
        view = unbatch(batch)
        pred = self.render(view)
        self.log_metrics(stage, image_metrics(pred, view["image"]), 1)
        if stage == "test" and batch_idx < FIGURE_VIEWS:
            path = os.path.join(figure_dir(self), f"test_{batch_idx:03d}_{self.hparams.expert}.png")
            panels = {"ground truth": view["image"], self.hparams.expert: pred}
            self.figures.append(side_by_side(panels, path))
        return {}

    def extra_results(self) -> dict:
        n = self.hparams.num_gaussians
        return {"figures": self.figures, "num_gaussians": n, "lpips": "not computed (no weights)"}

    def on_fit_end(self) -> None:
        if self.trainer.is_global_zero:
            state = {k: v.detach().cpu() for k, v in self.model.state_dict().items()}
            paths = [os.path.join(self.trainer.log_dir or self.trainer.default_root_dir, "expert.pt")]
            if self.hparams.export_name:
                paths.append(export_path(self.hparams.export_name))
            val = self.trainer.callback_metrics.get("val/psnr")
            val_psnr = float(val) if val is not None else float("nan")
            scene = {"scene": self.scene} if self.scene is not None else {}
            for path in paths:
                save_export(Path(path), self.hparams, state, self.global_step, val_psnr=val_psnr, **scene)

    def configure_optimizers(self):
        lr = {**DEFAULT_LR, **(self.hparams.lr or {})}
        return torch.optim.Adam(expert_param_groups(self.model, self.hparams.lr_means, lr), eps=1e-15)
