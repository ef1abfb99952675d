"""MoE-GS stage 2: weight splatting, the three router modes, frozen experts, blend = sum_k G'_k I_k, learning."""

from __future__ import annotations

import pytest
import torch

from zoo.errors import ConfigError
from zoo_tasks.splatting.experts import DynamicGaussians
from zoo_tasks.splatting.exports import save_export
from zoo_tasks.splatting.moe import MoEGS
from zoo_tasks.splatting.objective import render_view
from zoo_tasks.splatting.router import MODES, pixel_rays

KINDS = ("mlp", "hexplane", "trajectory")


def make_exports(folder, n=40, seed=0):
    """One export per expert kind, random canonical Gaussians (different per expert) that cover the view."""
    paths = []
    for k, kind in enumerate(KINDS):
        torch.manual_seed(seed + k)
        model = DynamicGaussians(kind, n, extent=0.6)
        with torch.no_grad():
            model.gaussians.opacity_logits.fill_(1.0)
            model.gaussians.sh[:, 0] = torch.randn(n, 3)
        hp = {"expert": kind, "num_gaussians": n, "sh_degree": 1, "expert_kwargs": None}
        paths.append(str(save_export(folder / f"{kind}.pt", hp, model.state_dict(), 0)))
    return paths


def make_batch(size=16, t=0.4, seed=0):
    viewmat = torch.eye(4)
    viewmat[2, 3] = 3.0
    K = torch.tensor([[20.0, 0, size / 2], [0, 20.0, size / 2], [0, 0, 1]])
    image = torch.rand(size, size, 3, generator=torch.Generator().manual_seed(seed))
    view = {"image": image, "time": torch.tensor(t), "viewmat": viewmat, "K": K, "background": torch.ones(3)}
    return {k: v[None] for k, v in view.items()}


def test_pixel_rays_point_through_pixels():
    viewmat = torch.eye(4)
    K = torch.tensor([[10.0, 0, 2.0], [0, 10.0, 2.0], [0, 0, 1]])
    rays = pixel_rays(viewmat, K, 4, 4)
    assert rays.shape == (16, 3) and torch.allclose(rays.norm(dim=-1), torch.ones(16))
    centre = rays[2 * 4 + 2]  # pixel (2, 2): centre (2.5, 2.5) -> direction (0.05, 0.05, 1)
    torch.testing.assert_close(centre, torch.nn.functional.normalize(torch.tensor([0.05, 0.05, 1.0]), dim=0))


def test_weight_splatting_is_colour_splatting(tmp_path):
    moe = MoEGS(experts=make_exports(tmp_path), router_mode="volume", backend="tiles")
    with torch.no_grad():
        moe.router.gauss_weights[1][:, 0] = 2.0  # w_i = 2 on every Gaussian of expert 1, the rest 0
    view = {k: v[0] for k, v in make_batch().items()}
    state = moe.experts[1](view["time"])
    extra = moe.router.gaussian_channels(1, state, view["viewmat"], view["time"])
    _, splat, alpha = render_view(state, view, extra, backend="tiles")
    torch.testing.assert_close(splat[..., 0], 2.0 * alpha[..., 0])  # a constant splats to constant * coverage
    assert alpha.max() > 0.5


@pytest.mark.parametrize("mode", MODES)
def test_blend_is_softmax_weighted_sum_and_only_router_learns(tmp_path, mode):
    moe = MoEGS(experts=make_exports(tmp_path), router_mode=mode, backend="tiles")
    with torch.no_grad():
        for w in moe.router.gauss_weights:
            w.normal_()
    view = {k: v[0] for k, v in make_batch().items()}
    image, renders, routing = moe.blend(view)
    weights = routing.dense_weights()
    torch.testing.assert_close(weights.sum(-1), torch.ones(len(weights)))
    manual = (weights.reshape(16, 16, 3, 1) * renders).sum(2)
    torch.testing.assert_close(image, manual)
    loss, _ = moe.loss_and_routing(make_batch())
    loss.backward()
    assert all(p.grad is None for p in moe.experts.parameters())
    grads = [p.grad for p in moe.router.parameters() if p.grad is not None]
    assert grads and any(g.abs().sum() > 0 for g in grads)


def test_router_learns_to_pick_the_right_expert(tmp_path):
    """Target = expert 2's render: routing towards expert 2 rises and the loss falls."""
    moe = MoEGS(experts=make_exports(tmp_path), router_mode="volume_pixel", backend="tiles", lr=1e-2, lr_weights=5e-2)
    batch = make_batch()
    view = {k: v[0] for k, v in batch.items()}
    with torch.no_grad():
        batch["image"] = moe.blend(view)[1][:, :, 2][None].clone()
    opt = moe.configure_optimizers()
    first = None
    for _ in range(30):
        opt.zero_grad()
        loss, routings = moe.loss_and_routing(batch)
        first = first if first is not None else loss.item()
        loss.backward()
        opt.step()
    assert loss.item() < 0.8 * first
    assert routings["pixel_router"].dense_weights()[:, 2].mean() > 0.4


def test_needs_two_experts_and_existing_exports(tmp_path):
    with pytest.raises(ConfigError, match="at least two"):
        MoEGS(experts=make_exports(tmp_path)[:1])
    with pytest.raises(ConfigError, match="no export .*no_such_expert"):
        MoEGS(experts=["no_such_expert", "other"])
    with pytest.raises(ConfigError, match="router_mode"):
        MoEGS(experts=make_exports(tmp_path), router_mode="global")


def test_gate_aware_pruning(tmp_path):
    from zoo_tasks.splatting.pruning import blend_psnr, gate_sensitivity, keep_mask, prune_curve

    moe = MoEGS(experts=make_exports(tmp_path), router_mode="volume_pixel", backend="tiles")
    with torch.no_grad():
        for w in moe.router.gauss_weights:
            w.normal_()
        moe.experts[0].gaussians.means[0] = torch.tensor([0.0, 0.0, -10.0])  # behind the camera: never splatted
    views = [{k: v[0] for k, v in make_batch(t=t).items()} for t in (0.2, 0.7)]
    scores = gate_sensitivity(moe, views)
    assert [len(s) for s in scores] == [40, 40, 40]
    assert scores[0][0] == 0 and scores[0].max() > 0
    assert keep_mask(torch.tensor([0.1, 3.0, 2.0, 0.0]), 0.5).tolist() == [False, True, True, False]
    full = blend_psnr(moe, views)
    curve = prune_curve(moe, views, views, [1.0, 0.5, 0.1])
    assert curve["1"] == pytest.approx(full, abs=1e-4)
    assert curve["0.1"] != pytest.approx(full, abs=1e-3)  # pruning 90% changes the render
    assert blend_psnr(moe, views) == pytest.approx(full, abs=1e-5)  # the experts were restored
    pixel = MoEGS(experts=make_exports(tmp_path), router_mode="pixel", backend="tiles")
    with pytest.raises(ConfigError, match="splatted"):
        gate_sensitivity(pixel, views)
