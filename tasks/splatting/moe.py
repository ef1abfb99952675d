"""Stage 2: MoE-GS (Jin et al., ICLR 2026) -- frozen stage-1 experts blended per pixel by the volume-aware router.

The experts are loaded from their stage-1 exports (:mod:`zoo_tasks.splatting.exports`) and frozen; only the router
(per-Gaussian weights + Phi, :class:`~zoo_tasks.splatting.router.VolumePixelRouter`) trains, with RAdam on
L1 + SSIM of the blended image ``I = sum_k G'_k I_k`` (``zoo.moe.combine_dense`` over the H W pixel tokens).
Each expert is rendered once per view with its colour and its 3 router channels in the same pass.

Test: PSNR / SSIM of the blend (``test/psnr``, ``test/ssim``) and of each expert alone (``test/psnr_<expert>``), the
first views' renders of every expert and of the blend beside the ground truth, and the per-pixel expert-weight map.
"""

from __future__ import annotations

import os
from pathlib import Path

import torch

from zoo.errors import ConfigError
from zoo.moe import combine_dense
from zoo.task_module import MoETaskModule, StepLoss
from zoo_tasks.splatting.exports import (
    check_scene,
    export_path,
    load_export,
    recorded_scene,
    refuse_replacing,
    save_export,
    scene_of,
)
from zoo_tasks.splatting.figures import side_by_side, weight_map
from zoo_tasks.splatting.module import FIGURE_VIEWS, build_expert, figure_dir
from zoo_tasks.splatting.objective import image_loss, image_metrics, render_view, unbatch
from zoo_tasks.splatting.pruning import prune_curve
from zoo_tasks.splatting.router import PAPER_ROUTER, VolumePixelRouter, pixel_rays


class MoEGS(MoETaskModule):
    """MoE-GS router stage over frozen experts.

    Args:
        experts: stage-1 expert exports, by export name (this run's seed) or ``.pt`` path; at least two.
        router_mode: ``"volume_pixel"`` (the paper), ``"volume"`` or ``"pixel"`` (the ablations).
        router: ``"moe_gs"`` (the paper's rule) or a ``zoo.moe`` router name gating the same per-pixel features.
        router_kwargs, top_k: for a ``zoo.moe`` router.
        aux_weights: ``zoo.moe`` aux-loss weights (a ``zoo.moe`` router's load balance, ...); none in the paper.
        hidden: width of Phi.
        lr: RAdam learning rate of Phi; ``lr_weights`` of the per-Gaussian router weights.
        ssim_weight, backend: as :class:`~zoo_tasks.splatting.module.ExpertGS`.
        export_name: when set, the trained router is exported (for :class:`~zoo_tasks.splatting.distill.DistillGS`).
        prune_fractions: kept fractions for gate-aware pruning after the test (:mod:`zoo_tasks.splatting.pruning`;
            scores from ``prune_score_views`` training views), logged as ``test/psnr_keep<percent>``; None: off.

    Experts trained on another scene than the run's are refused when the trainer sets the module up
    (:func:`~zoo_tasks.splatting.exports.check_scene`).
    """

    synced_stages = ("val", "test")

    def __init__(
        self,
        experts: list[str] | None = None,
        router_mode: str = "volume_pixel",
        router: str = PAPER_ROUTER,
        router_kwargs: dict | None = None,
        top_k: int = 2,
        aux_weights: dict[str, float] | None = None,
        hidden: int = 32,
        lr: float = 1e-3,
        lr_weights: float = 1e-2,
        ssim_weight: float = 0.2,
        backend: str = "auto",
        export_name: str | None = None,
        prune_fractions: list[float] | None = None,
        prune_score_views: int = 10,
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.aux_weights = dict(aux_weights or {})
        experts = list(experts or [])
        if len(experts) < 2:
            raise ConfigError(f"experts: MoE-GS blends at least two stage-1 experts, got {experts}")
        self.experts = torch.nn.ModuleList()
        self.expert_names: list[str] = []
        # (what, export path, the scene it records): the experts' exports, and a distillation teacher's own export
        self.export_scenes: list[tuple[str, Path, dict | None]] = []
        self.scene: dict[str, str] | None = None  # the run's scene, recorded in the router export
        for entry in experts:
            blob, path = load_export(entry)
            self.export_scenes.append(("expert", path, recorded_scene(blob, path)))
            h = blob["hparams"]
            model = build_expert(h["expert"], h["num_gaussians"], h.get("sh_degree", 1), h.get("expert_kwargs"))
            model.load_state_dict(blob["state_dict"])
            model.requires_grad_(False)
            self.experts.append(model)
            name = h["expert"]
            self.expert_names.append(name if name not in self.expert_names else f"{name}{len(self.expert_names)}")
        self.router = VolumePixelRouter(
            [len(e.gaussians) for e in self.experts], router_mode, router, top_k, router_kwargs, hidden
        )
        self.figures: list[str] = []
        self.pruning: dict[str, float] = {}
        self._test_views: list[dict] = []

    def train(self, mode: bool = True):
        super().train(mode)
        self.experts.eval()  # frozen
        return self

    def check_scene(self, scene: dict[str, str] | None) -> None:
        """Refuse an export (expert, or a teacher's router) trained on another scene than ``scene``."""
        for what, path, recorded in self.export_scenes:
            check_scene(recorded, path, scene, what)

    def setup(self, stage: str) -> None:
        self.scene = scene_of(self.trainer.datamodule)
        self.check_scene(self.scene)
        if stage == "fit" and self.hparams.export_name and self.scene is not None:
            refuse_replacing(export_path(self.hparams.export_name), self.scene, f"{self.scene['name']}_moe_gs")

    def blend(self, view: dict):
        """Render every expert (colour + router channels in one pass) and blend: (image (H, W, 3), per-expert
        renders (H, W, E, 3), routing over the H W pixels)."""
        height, width = view["image"].shape[:2]
        renders, splats = [], []
        for k, expert in enumerate(self.experts):
            with torch.no_grad():
                state = expert(view["time"])
            extra = None
            if self.router.needs_splat:
                extra = self.router.gaussian_channels(k, state, view["viewmat"], view["time"])
            rgb, splat, _ = render_view(state, view, extra, backend=self.hparams.backend)
            renders.append(rgb.detach())
            splats.append(splat)
        rgb = torch.stack(renders, dim=2)  # (H, W, E, 3)
        splat = None
        if splats[0] is not None:
            splat = torch.stack(splats, dim=2).reshape(height * width, len(self.experts), 3)
        rays = pixel_rays(view["viewmat"], view["K"], width, height)
        routing = self.router(splat, rays, view["time"])
        image = combine_dense(rgb.reshape(height * width, len(self.experts), 3), routing).reshape(height, width, 3)
        return image, rgb, routing

    def step_loss(self, batch) -> StepLoss:
        """L1 + SSIM of the blended render of one training view + the weighted aux losses of the pixel router."""
        view = unbatch(batch)
        image, _, routing = self.blend(view)
        routings = {"pixel_router": routing}
        loss = self.with_aux_loss(image_loss(image, view["image"], self.hparams.ssim_weight), routings)
        return StepLoss(loss, routings, {"loss": loss}, 1)

    def evaluate(self, batch, batch_idx: int, stage: str, dataloader_idx: int = 0) -> dict:
        """PSNR / SSIM of the blend; at test time also of each expert alone, the first views' figures, and the views
        kept for gate-aware pruning."""
        view = unbatch(batch)
        image, rgb, routing = self.blend(view)
        self.log_metrics(stage, image_metrics(image, view["image"]), 1)
        if stage == "test":
            for k, name in enumerate(self.expert_names):
                metrics = image_metrics(rgb[:, :, k], view["image"])
                self.log_metrics(stage, {f"{metric}_{name}": value for metric, value in metrics.items()}, 1)
            if self.hparams.prune_fractions:
                self._test_views.append(view)
            if batch_idx < FIGURE_VIEWS:
                self._test_figures(batch_idx, view, image, rgb, routing)
        return {"pixel_router": routing.detach()}

    def _test_figures(self, batch_idx: int, view: dict, image, rgb, routing) -> None:
        """Every expert's render and the blend beside the ground truth, and the per-pixel expert-weight map."""
        folder = figure_dir(self)
        panels = {"ground truth": view["image"], **{n: rgb[:, :, k] for k, n in enumerate(self.expert_names)}}
        panels[f"MoE-GS ({self.hparams.router_mode})"] = image
        self.figures.append(side_by_side(panels, os.path.join(folder, f"test_{batch_idx:03d}_all_methods.png")))
        h, w = image.shape[:2]
        weights = routing.dense_weights().reshape(h, w, -1)
        path = os.path.join(folder, f"test_{batch_idx:03d}_weights.png")
        self.figures.append(weight_map(weights, self.expert_names, path))

    def on_fit_end(self) -> None:
        if self.trainer.is_global_zero and self.hparams.export_name:
            state = {k: v.detach().cpu() for k, v in self.router.state_dict().items()}
            scene = {"scene": self.scene} if self.scene is not None else {}
            save_export(export_path(self.hparams.export_name), self.hparams, state, self.global_step, **scene)

    def on_test_epoch_start(self) -> None:
        self._test_views = []

    def on_test_epoch_end(self) -> None:
        if not self.hparams.prune_fractions or not self._test_views:
            return
        train = self.trainer.datamodule.split("train")
        step = max(1, len(train) // self.hparams.prune_score_views)
        score_views = [
            {"image": train.images[i], "time": train.times[i], "viewmat": train.viewmats[i], "K": train.K,
             "background": train.background}
            for i in range(0, len(train), step)
        ][: self.hparams.prune_score_views]  # fmt: skip
        # Lightning tests under inference mode; the scores need autograd (and normal, non-inference tensors)
        with torch.inference_mode(False), torch.enable_grad():
            score_views = [{k: v.to(self.device).clone() for k, v in view.items()} for view in score_views]
            test_views = [{k: v.clone() for k, v in view.items()} for view in self._test_views]
            self.pruning = prune_curve(self, score_views, test_views, list(self.hparams.prune_fractions))
        self.log_metrics("test", {f"psnr_keep{round(float(f) * 100)}": psnr for f, psnr in self.pruning.items()})
        self._test_views = []

    def extra_results(self) -> dict:
        return {
            "figures": self.figures,
            "experts": self.expert_names,
            "pruning_psnr_by_kept_fraction": self.pruning,
            "lpips": "not computed (no weights)",
        }

    def configure_optimizers(self):
        r = self.router
        groups = [{"params": list(r.gauss_weights.parameters()), "lr": self.hparams.lr_weights}]
        rest = [p for n, p in r.named_parameters() if not n.startswith("gauss_weights")]
        if rest:
            groups.append({"params": rest, "lr": self.hparams.lr})
        return torch.optim.RAdam(groups)
