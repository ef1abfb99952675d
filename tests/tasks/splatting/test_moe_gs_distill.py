"""Distillation: the teacher is the exported MoE-GS, the student its best expert, and the student moves to the blend."""

from __future__ import annotations

import pytest
import torch
from test_moe_gs_moe import KINDS, make_batch

from zoo.errors import ConfigError
from zoo_tasks.splatting.distill import DistillGS
from zoo_tasks.splatting.experts import DynamicGaussians
from zoo_tasks.splatting.exports import save_export
from zoo_tasks.splatting.moe import MoEGS
from zoo_tasks.splatting.objective import image_loss


def _teacher(tmp_path, val_psnrs=(10.0, 12.0, 11.0)):
    paths = []
    for k, kind in enumerate(KINDS):
        torch.manual_seed(k)
        model = DynamicGaussians(kind, 30, extent=0.6)
        with torch.no_grad():
            model.gaussians.opacity_logits.fill_(1.0)
            model.gaussians.sh[:, 0] = torch.randn(30, 3)
        hp = {"expert": kind, "num_gaussians": 30}
        paths.append(str(save_export(tmp_path / f"{kind}.pt", hp, model.state_dict(), 0, val_psnr=val_psnrs[k])))
    moe = MoEGS(experts=paths, backend="tiles")
    with torch.no_grad():
        for w in moe.router.gauss_weights:
            w.normal_()
    hparams = dict(moe.hparams)
    return str(save_export(tmp_path / "moe.pt", hparams, moe.router.state_dict(), 0)), moe


def test_student_is_the_best_expert_and_learns_the_blend(tmp_path):
    path, moe = _teacher(tmp_path)
    distill = DistillGS(teacher=path, backend="tiles", lr_means=1e-2)
    assert distill.student_name == "hexplane"  # the best val_psnr
    batch = make_batch(size=12)
    view = {k: v[0] for k, v in batch.items()}
    torch.testing.assert_close(distill.teacher.blend(view)[0], moe.blend(view)[0])  # the router was restored

    def gap() -> float:
        with torch.no_grad():
            return image_loss(distill.render(distill.student, view), distill.teacher.blend(view)[0]).item()

    opt = distill.configure_optimizers()
    start = gap()
    for _ in range(15):
        opt.zero_grad()
        distill.training_step(batch, 0)["loss"].backward()
        opt.step()
    assert gap() < 0.9 * start
    assert all(p.grad is None for p in distill.teacher.parameters())


def test_unknown_student(tmp_path):
    path, _ = _teacher(tmp_path)
    with pytest.raises(ConfigError, match="student='nerf'.*mlp, hexplane, trajectory"):
        DistillGS(teacher=path, student="nerf")
