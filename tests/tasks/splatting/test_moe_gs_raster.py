"""The tile rasteriser equals the naive per-pixel loop and the dense reference (values and gradients)."""

from __future__ import annotations

import pytest
import torch

from zoo.errors import ConfigError
from zoo_tasks.splatting.raster import rasterize_dense, rasterize_naive, rasterize_tiles, tile_intersections
from zoo_tasks.splatting.render import choose_backend, project, render


def _scene(n=40, width=37, height=29, seed=0, opaque=False):
    g = torch.Generator().manual_seed(seed)
    means = torch.randn(n, 3, generator=g) * 0.5
    quats = torch.randn(n, 4, generator=g)
    scales = torch.rand(n, 3, generator=g) * 0.15 + 0.02
    opac = torch.rand(n, generator=g) * (0.2 if opaque else 0.9) + (0.8 if opaque else 0.05)
    colors = torch.rand(n, 4, generator=g)
    viewmat = torch.eye(4)
    viewmat[2, 3] = 3.0
    K = torch.tensor([[40.0, 0, width / 2], [0, 40.0, height / 2], [0, 0, 1]])
    quats = torch.nn.functional.normalize(quats, dim=-1)
    radii, means2d, depths, conics = project(means, quats, scales, viewmat, K, width, height)
    return means2d, conics, opac, colors, depths, radii, width, height


def _grads(fn, args, bg):
    leaves = [a.detach().clone().requires_grad_(True) for a in args[:4]]
    color, alpha = fn(*leaves, *args[4:], background=bg)
    w = torch.linspace(0.1, 1.0, color.numel()).reshape(color.shape)
    ((color * w).sum() + alpha.sum()).backward()
    return color.detach(), alpha.detach(), [a.grad for a in leaves]


@pytest.mark.parametrize("opaque", [False, True])  # opaque: many pixels stop early (T <= 1e-4)
def test_tiles_and_dense_equal_naive_values_and_gradients(opaque):
    args = _scene(opaque=opaque)
    bg = torch.tensor([0.2, 0.4, 0.6, 0.8])
    ref_c, ref_a, ref_g = _grads(rasterize_naive, args, bg)
    assert ref_a.max() > 0.9 and ref_a.min() < 0.1  # the scene covers part of the image
    for fn in (
        lambda *a, **k: rasterize_tiles(*a, **k, chunk=4096, depth_chunk=7),  # many tile and depth chunks
        lambda *a, **k: rasterize_tiles(*a, **k, checkpoint=False),
        lambda *a, **k: rasterize_dense(*a, **k, chunk=500),
    ):
        c, a, g = _grads(fn, args, bg)
        torch.testing.assert_close(c, ref_c, atol=1e-5, rtol=1e-4)
        torch.testing.assert_close(a, ref_a, atol=1e-5, rtol=1e-4)
        for got, want in zip(g, ref_g, strict=True):
            torch.testing.assert_close(got, want, atol=1e-4, rtol=1e-3)


def test_a_view_with_every_gaussian_culled_renders_the_background_with_zero_gradients():
    means2d, conics, opac, colors, depths, radii, width, height = _scene()
    behind = torch.zeros_like(radii)  # the projection culled every Gaussian (e.g. all out of frame)
    bg = torch.tensor([1.0, 1.0, 1.0, 0.5])
    for fn in (rasterize_tiles, rasterize_dense):
        color, alpha, grads = _grads(fn, (means2d, conics, opac, colors, depths, behind, width, height), bg)
        torch.testing.assert_close(color, bg.expand(height, width, 4))
        assert alpha.abs().max() == 0
        assert all(g is not None and g.abs().max() == 0 for g in grads)  # backward runs, nothing is pushed


def test_early_termination_happens_and_matters():
    args = _scene(opaque=True, n=80)
    color, alpha = rasterize_naive(*args)
    assert (1 - alpha).min() <= 1e-3  # some pixels are nearly opaque: the stop rule was exercised


def test_tile_lists_are_depth_sorted_and_cover_boxes():
    means2d, _, _, _, depths, radii, w, h = _scene(n=30)
    tiles, gauss = tile_intersections(means2d, radii, depths, w, h)
    assert bool((tiles.diff() >= 0).all())
    same = tiles[1:] == tiles[:-1]
    assert bool((depths[gauss[1:]][same] >= depths[gauss[:-1]][same]).all())
    culled = torch.nonzero(~(radii > 0).all(-1)).squeeze(1)
    assert not bool(torch.isin(gauss, culled).any())


def test_backend_selection_by_device():
    assert choose_backend("auto", torch.device("cpu"), cuda_ok=True) == "tiles"
    assert choose_backend("auto", torch.device("cuda"), cuda_ok=True) == "gsplat_cuda"
    assert choose_backend("auto", torch.device("cuda"), cuda_ok=False) == "tiles"
    with pytest.raises(ConfigError, match="backend"):
        choose_backend("opengl", torch.device("cpu"))
    with pytest.raises(ConfigError, match="gsplat_cuda"):
        choose_backend("gsplat_cuda", torch.device("cpu"), cuda_ok=False)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA for gsplat's rasteriser")
def test_gsplat_cuda_matches_tiles_on_gpu():
    g = torch.Generator().manual_seed(0)
    n = 50
    means, quats = torch.randn(n, 3, generator=g) * 0.5, torch.randn(n, 4, generator=g)
    scales, opac = torch.rand(n, 3, generator=g) * 0.1 + 0.02, torch.rand(n, generator=g) * 0.5 + 0.1
    colors, viewmat = torch.rand(n, 3, generator=g), torch.eye(4)
    viewmat[2, 3] = 3.0
    K = torch.tensor([[40.0, 0, 16], [0, 40.0, 16], [0, 0, 1]])
    cpu, _ = render(means, quats, scales, opac, colors, viewmat, K, 32, 32, backend="tiles")
    cuda_args = [t.cuda() for t in (means, quats, scales, opac, colors, viewmat, K)]
    gpu, _ = render(*cuda_args, 32, 32, backend="auto")
    torch.testing.assert_close(gpu.cpu(), cpu, atol=2e-3, rtol=1e-2)
