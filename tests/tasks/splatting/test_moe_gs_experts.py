"""Deformation experts: identity at start, closed forms, and each one learns a moving blob through the rasteriser."""

from __future__ import annotations

import math
from unittest import mock

import pytest
import torch

from zoo.errors import ConfigError
from zoo_tasks.splatting.experts import EXPERTS, DynamicGaussians, HexPlaneDeformation, TrajectoryDeformation, posenc
from zoo_tasks.splatting.module import DEFAULT_LR, ExpertGS, expert_param_groups
from zoo_tasks.splatting.objective import image_loss, render_view


def _view(t: float, size: int = 24) -> dict:
    viewmat = torch.eye(4)
    viewmat[2, 3] = 4.0
    K = torch.tensor([[30.0, 0, size / 2], [0, 30.0, size / 2], [0, 0, 1]])
    return {"image": torch.zeros(size, size, 3), "time": torch.tensor(t), "viewmat": viewmat, "K": K,
            "background": torch.ones(3)}  # fmt: skip


def test_posenc_shape_and_values():
    x = torch.tensor([[0.25, -0.5]])
    out = posenc(x, 3)
    assert out.shape == (1, 2 * 7)
    assert out[0, 2].item() == pytest.approx(math.sin(math.pi * 0.25))


@pytest.mark.parametrize("kind", EXPERTS)
def test_every_expert_starts_static(kind):
    torch.manual_seed(0)
    model = DynamicGaussians(kind, 50)
    a, b = model(torch.tensor(0.1)), model(torch.tensor(0.9))
    for x, y in zip(a, b, strict=True):
        torch.testing.assert_close(x, y)
    torch.testing.assert_close(a.means, model.gaussians.means)


def test_trajectory_closed_form():
    traj = TrajectoryDeformation(num=1, degree=2, frequencies=1)
    with torch.no_grad():
        traj.poly[0, 0] = torch.tensor([1.0, 0, 0])  # linear in tau
        traj.poly[0, 1] = torch.tensor([0, 2.0, 0])  # quadratic
        traj.fourier[0, 0] = torch.tensor([0, 0, 3.0])  # sin(2 pi t)
    t = torch.tensor(0.8)
    dx, dq, ds = traj(torch.zeros(1, 3), t)
    tau = 0.3
    expected = torch.tensor([[tau, 2 * tau**2, 3 * math.sin(2 * math.pi * 0.8)]])
    torch.testing.assert_close(dx, expected)
    assert dq.abs().sum() == 0 and ds.abs().sum() == 0


def test_hexplane_product_of_planes():
    field = HexPlaneDeformation(channels=2, resolutions=(4,), time_resolution=3, width=8)
    with torch.no_grad():
        for p in field.planes:
            p.fill_(1.0)
        field.planes[0].fill_(2.0)  # the xy plane
        field.planes[5].fill_(3.0)  # the zt plane
    captured = {}
    field.decoder.register_forward_hook(lambda m, inp, out: captured.update(features=inp[0]))
    field(torch.rand(5, 3) - 0.5, torch.tensor([[0.3]]))
    torch.testing.assert_close(captured["features"], torch.full((5, 2), 6.0))


def test_unknown_expert():
    with pytest.raises(ConfigError, match="expert='nerf'.*mlp"):
        DynamicGaussians("nerf", 10)


@pytest.mark.parametrize("kind", EXPERTS)
def test_every_expert_learns_a_moving_blob(kind):
    """Targets rendered from one Gaussian cloud translated with t: the loss falls for each expert."""
    torch.manual_seed(0)
    truth = DynamicGaussians("trajectory", 60, extent=0.5)
    with torch.no_grad():
        truth.deform.poly[:, 0] = torch.tensor([0.6, 0.0, 0.0])
        truth.gaussians.opacity_logits.fill_(2.0)
        truth.gaussians.sh[:, 0] = torch.randn(60, 3)
    views = []
    for t in (0.0, 0.5, 1.0):
        v = _view(t)
        v["image"] = render_view(truth(v["time"]), v, backend="tiles")[0].detach()
        views.append(v)
    model = DynamicGaussians(kind, 60, extent=0.5)
    opt = torch.optim.Adam(expert_param_groups(model, 1e-2, {**DEFAULT_LR, "deform": 5e-3}), eps=1e-15)

    def total() -> torch.Tensor:
        return sum(image_loss(render_view(model(v["time"]), v, backend="tiles")[0], v["image"]) for v in views)

    start = total().item()
    for _ in range(25):
        opt.zero_grad()
        loss = total()
        loss.backward()
        opt.step()
    assert total().item() < 0.8 * start
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in model.deform.parameters())


@pytest.mark.parametrize("kind", EXPERTS)
def test_deformation_warm_up_trains_the_canonical_gaussians_alone(kind):
    """Deformable-3DGS's warm-up: while ``global_step < deform_warmup_steps`` a training render skips the
    deformation (no gradient reaches it); evaluation renders and later steps use it."""
    torch.manual_seed(0)
    module = ExpertGS(expert=kind, num_gaussians=40, deform_warmup_steps=2)
    with torch.no_grad():  # a non-zero deformation, so skipping it shows in the render
        for p in module.model.deform.parameters():
            p.add_(0.05 * torch.randn_like(p))
    view = _view(0.7)
    canonical = render_view(module.model(view["time"], static=True), view, backend="tiles")[0]
    deformed = render_view(module.model(view["time"]), view, backend="tiles")[0]
    assert not torch.allclose(canonical, deformed)
    module.train()
    for step, expected in ((0, canonical), (1, canonical), (2, deformed)):
        module.model.zero_grad()
        with mock.patch.object(ExpertGS, "global_step", step):
            out = module.render(view)
        torch.testing.assert_close(out, expected)
        out.sum().backward()
        reached = any(p.grad is not None and p.grad.abs().sum() > 0 for p in module.model.deform.parameters())
        assert reached == (step >= 2)
    module.eval()
    with mock.patch.object(ExpertGS, "global_step", 0):
        torch.testing.assert_close(module.render(view), deformed)  # evaluation always deforms
