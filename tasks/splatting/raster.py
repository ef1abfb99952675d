"""CPU rasterisers of projected 2D Gaussians: a tile-based one (the fast path) and two dense references.

All three composite front to back with gsplat's CUDA rule (Kerbl et al., 3D Gaussian Splatting, SIGGRAPH 2023;
gsplat 1.5 ``rasterize_to_pixels``): for pixel centre p = (x + 0.5, y + 0.5) and Gaussian i in depth order,
``sigma = 0.5 (a dx^2 + c dy^2) + b dx dy`` with conic (a, b, c), ``alpha = min(0.999, o_i exp(-sigma))``, skipped
when ``sigma < 0`` or ``alpha < 1/255``; the pixel stops at the first Gaussian that would bring its transmittance
T to 1e-4 or below; colour = sum_i alpha_i T_i c_i + T_final * background.

- :func:`rasterize_tiles`: Gaussians binned into square tiles (8x8 by default) by their 3.33-sigma boxes (as
  gsplat's ``isect_tiles``), each tile's list depth-sorted, tiles and depth in chunks of at most ``chunk``
  (pixel, Gaussian) pairs, each chunk under activation checkpointing so backward memory is bounded too; a tile
  leaves the loop when its list is exhausted or all its pixels have stopped (gsplat's early termination, per tile).
- :func:`rasterize_dense`: every pixel against every Gaussian (pixel chunks): the vectorised reference the
  benchmark compares with.
- :func:`rasterize_naive`: one Gaussian at a time over all pixels, a literal loop of the rule (tests only).

Shapes: means2d (N, 2), conics (N, 3), opacities (N,), colors (N, C), depths (N,), radii (N, 2) int;
returns colour (H, W, C) and alpha (H, W, 1).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor
from torch.utils.checkpoint import checkpoint as _checkpoint

ALPHA_MIN = 1.0 / 255.0
ALPHA_MAX = 0.999
T_MIN = 1e-4
TILE = 8  # CPU: 8x8 tiles waste fewer (pixel, Gaussian) pairs than gsplat's 16x16 (measured in the notes)


def _alpha(px: Tensor, means2d: Tensor, conics: Tensor, opacities: Tensor) -> Tensor:
    """(B, P, 2) pixels x (B, K, ...) Gaussians -> (B, P, K) alpha, 0 where skipped.

    Unculled conics are positive definite (the projection zeroes the radius of any other), so ``sigma >= 0`` holds
    and only the ``alpha < 1/255`` test is needed."""
    dx = px[..., :, None, 0] - means2d[..., None, :, 0]
    dy = px[..., :, None, 1] - means2d[..., None, :, 1]
    a, b, c = conics[..., None, :, 0], conics[..., None, :, 1], conics[..., None, :, 2]
    sigma = (0.5 * a) * dx * dx + (0.5 * c) * dy * dy + b * dx * dy
    alpha = (opacities[..., None, :] * torch.exp(-sigma)).clamp_max(ALPHA_MAX)
    return torch.where(alpha >= ALPHA_MIN, alpha, torch.zeros_like(alpha))


def _composite(alpha: Tensor, colors: Tensor, T: Tensor, acc: Tensor, done: Tensor):
    """One depth chunk: alpha (B, P, K), colors (B, K, C), carried T (B, P), acc (B, P, C), done (B, P) bool.

    T_incl (transmittance after each Gaussian) never increases along K, so "this or an earlier Gaussian brought T to
    1e-4 or below" is just ``T_incl <= 1e-4``; ``done`` carries pixels that stopped in an earlier chunk."""
    one_minus = 1.0 - alpha
    T_incl = T[..., None] * torch.cumprod(one_minus, dim=-1)
    stopped = T_incl.detach() <= T_MIN
    live = ~(stopped | done[..., None])
    weight = torch.where(live, alpha * (T_incl / one_minus), torch.zeros_like(alpha))  # alpha * T before it
    acc = acc + weight @ colors
    T = T * torch.where(live, one_minus, torch.ones_like(one_minus)).prod(dim=-1)
    return T, acc, done | stopped[..., -1]


def _chunk_step(px, gid, pad, means2d, conics, opacities, colors, T, acc, done):
    opac = torch.where(pad, opacities[gid], torch.zeros_like(opacities[gid]))
    alpha = _alpha(px, means2d[gid], conics[gid], opac)
    return _composite(alpha, colors[gid], T, acc, done)


def _run(step, *args, checkpoint: bool):
    if checkpoint and torch.is_grad_enabled():
        return _checkpoint(step, *args, use_reentrant=False)
    return step(*args)


def _zero_of(*inputs: Tensor) -> Tensor:
    """A zero that depends on ``inputs``. A view in which every Gaussian is culled (all out of frame, say) renders
    the background alone; like gsplat's CUDA rasteriser, that image must still be a function of the Gaussians with
    zero gradient, or ``loss.backward()`` fails on a tensor without a graph."""
    return sum((x.sum() * 0 for x in inputs if x.requires_grad), torch.zeros((), device=inputs[0].device))


def _finish(acc: Tensor, T: Tensor, background: Tensor | None) -> tuple[Tensor, Tensor]:
    if background is not None:
        acc = acc + T[..., None] * background.to(acc)
    return acc, (1.0 - T)[..., None]


def tile_intersections(means2d: Tensor, radii: Tensor, depths: Tensor, width: int, height: int, tile: int = TILE):
    """Per-tile depth-sorted Gaussian lists: (tile_ids (M,), gauss_ids (M,)) sorted by (tile, depth), M pairs.

    A Gaussian with a zero radius (culled by the projection) is in no tile.
    """
    tiles_x, tiles_y = math.ceil(width / tile), math.ceil(height / tile)
    m, r = means2d.detach() / tile, radii.to(means2d.dtype) / tile
    lo = torch.floor(m - r).long()
    hi = torch.ceil(m + r).long()
    lo[:, 0].clamp_(0, tiles_x), hi[:, 0].clamp_(0, tiles_x)
    lo[:, 1].clamp_(0, tiles_y), hi[:, 1].clamp_(0, tiles_y)
    span = hi - lo
    count = span[:, 0] * span[:, 1] * (radii > 0).all(dim=-1)
    gauss = torch.repeat_interleave(torch.arange(len(count), device=count.device), count)
    start = torch.cumsum(count, 0) - count
    local = torch.arange(len(gauss), device=count.device) - start[gauss]
    w = span[gauss, 0].clamp_min(1)
    tx, ty = lo[gauss, 0] + local % w, lo[gauss, 1] + local // w
    tile_ids = ty * tiles_x + tx
    rank = torch.empty_like(count)
    rank[torch.argsort(depths.detach(), stable=True)] = torch.arange(len(count), device=count.device)
    order = torch.argsort(tile_ids * len(count) + rank[gauss])
    return tile_ids[order], gauss[order]


def rasterize_tiles(
    means2d: Tensor,
    conics: Tensor,
    opacities: Tensor,
    colors: Tensor,
    depths: Tensor,
    radii: Tensor,
    width: int,
    height: int,
    background: Tensor | None = None,
    tile: int = TILE,
    chunk: int = 1 << 21,
    depth_chunk: int = 64,
    checkpoint: bool = True,
) -> tuple[Tensor, Tensor]:
    """Tile-based differentiable rasteriser (see the module docstring); ``chunk`` bounds (pixel, Gaussian) pairs
    per step, ``depth_chunk`` the Gaussians per tile per step."""
    device, channels = means2d.device, colors.shape[-1]
    tiles_x, tiles_y = math.ceil(width / tile), math.ceil(height / tile)
    P = tile * tile
    tile_ids, gauss = tile_intersections(means2d, radii, depths, width, height, tile)
    counts = torch.bincount(tile_ids, minlength=tiles_x * tiles_y)
    offsets = torch.cumsum(counts, 0) - counts
    iy, ix = torch.meshgrid(torch.arange(tile, device=device), torch.arange(tile, device=device), indexing="ij")
    local_px = torch.stack([ix.reshape(-1), iy.reshape(-1)], dim=-1).to(means2d.dtype) + 0.5  # (P, 2)
    acc_all = means2d.new_zeros(tiles_x * tiles_y, P, channels)
    T_all = means2d.new_ones(tiles_x * tiles_y, P)
    busy = torch.nonzero(counts > 0).squeeze(1)
    busy = busy[torch.argsort(counts[busy], descending=True)]  # similar lengths share a chunk: little padding
    depth_chunk = max(1, min(depth_chunk, chunk // P))
    done_tiles, accs, Ts = [], [], []
    i = 0
    while i < len(busy):
        longest = int(counts[busy[i]])
        k = min(depth_chunk, longest)
        b = max(1, chunk // (P * k))
        group = busy[i : i + b]
        i += len(group)
        origin = torch.stack([group % tiles_x, group // tiles_x], dim=-1).to(means2d.dtype) * tile
        px = origin[:, None, :] + local_px[None]  # (B, P, 2)
        T = means2d.new_ones(len(group), P)
        acc = means2d.new_zeros(len(group), P, channels)
        done = (px[..., 0] > width) | (px[..., 1] > height)  # pixels of edge tiles outside the image never count
        n = counts[group]
        rows = torch.arange(len(group), device=device)  # the group's tiles still compositing
        for start in range(0, longest, k):
            if start:  # a tile is finished when its list is exhausted or every pixel has stopped (T <= 1e-4)
                alive = (n[rows] > start) & ~done.all(dim=1)
                if not bool(alive.all()):
                    finished = ~alive
                    done_tiles.append(group[rows[finished]])
                    accs.append(acc[finished])
                    Ts.append(T[finished])
                    rows, px, T, acc, done = rows[alive], px[alive], T[alive], acc[alive], done[alive]
                    if len(rows) == 0:
                        break
            slot = start + torch.arange(k, device=device)
            pad = slot[None, :] < n[rows, None]  # (B, k)
            index = torch.where(pad, offsets[group[rows], None] + slot[None, :], torch.zeros_like(slot[None, :]))
            gid = gauss[index]
            T, acc, done = _run(
                _chunk_step, px, gid, pad, means2d, conics, opacities, colors, T, acc, done, checkpoint=checkpoint
            )
        if len(rows):
            done_tiles.append(group[rows])
            accs.append(acc)
            Ts.append(T)
    if done_tiles:
        index = torch.cat(done_tiles)
        acc_all = acc_all.index_copy(0, index, torch.cat(accs))
        T_all = T_all.index_copy(0, index, torch.cat(Ts))
    else:
        acc_all = acc_all + _zero_of(means2d, conics, opacities, colors)
    acc_img = acc_all.reshape(tiles_y, tiles_x, tile, tile, channels).permute(0, 2, 1, 3, 4)
    T_img = T_all.reshape(tiles_y, tiles_x, tile, tile).permute(0, 2, 1, 3)
    acc_img = acc_img.reshape(tiles_y * tile, tiles_x * tile, channels)[:height, :width]
    T_img = T_img.reshape(tiles_y * tile, tiles_x * tile)[:height, :width]
    return _finish(acc_img, T_img, background)


def _pixels(width: int, height: int, like: Tensor) -> Tensor:
    y, x = torch.meshgrid(torch.arange(height), torch.arange(width), indexing="ij")
    return torch.stack([x.reshape(-1), y.reshape(-1)], dim=-1).to(like) + 0.5  # (H W, 2)


def rasterize_dense(
    means2d: Tensor,
    conics: Tensor,
    opacities: Tensor,
    colors: Tensor,
    depths: Tensor,
    radii: Tensor,
    width: int,
    height: int,
    background: Tensor | None = None,
    chunk: int = 1 << 21,
    checkpoint: bool = True,
) -> tuple[Tensor, Tensor]:
    """Dense reference: every pixel composites every (unculled) Gaussian in global depth order, in pixel chunks."""
    keep = torch.nonzero((radii > 0).all(dim=-1)).squeeze(1)
    order = keep[torch.argsort(depths.detach()[keep], stable=True)]
    if len(order) == 0:
        T = means2d.new_ones(height, width)
        return _finish(
            means2d.new_zeros(height, width, colors.shape[-1]) + _zero_of(means2d, conics, opacities, colors),
            T,
            background,
        )
    px = _pixels(width, height, means2d)
    rows = max(1, chunk // len(order))
    accs, Ts = [], []
    for start in range(0, len(px), rows):
        p = px[start : start + rows][None]
        T = means2d.new_ones(1, p.shape[1])
        acc = means2d.new_zeros(1, p.shape[1], colors.shape[-1])
        done = torch.zeros(1, p.shape[1], dtype=torch.bool, device=means2d.device)
        pad = torch.ones(1, len(order), dtype=torch.bool, device=means2d.device)
        T, acc, _ = _run(
            _chunk_step, p, order[None], pad, means2d, conics, opacities, colors, T, acc, done, checkpoint=checkpoint
        )
        accs.append(acc[0])
        Ts.append(T[0])
    acc = torch.cat(accs).reshape(height, width, -1)
    return _finish(acc, torch.cat(Ts).reshape(height, width), background)


def rasterize_naive(
    means2d: Tensor,
    conics: Tensor,
    opacities: Tensor,
    colors: Tensor,
    depths: Tensor,
    radii: Tensor,
    width: int,
    height: int,
    background: Tensor | None = None,
) -> tuple[Tensor, Tensor]:
    """The compositing rule written as gsplat's per-pixel loop, one Gaussian at a time (tiny scenes only)."""
    px = _pixels(width, height, means2d)
    T = means2d.new_ones(len(px))
    acc = means2d.new_zeros(len(px), colors.shape[-1])
    done = torch.zeros(len(px), dtype=torch.bool)
    for i in torch.argsort(depths.detach(), stable=True).tolist():
        if not bool((radii[i] > 0).all()):
            continue
        dx, dy = px[:, 0] - means2d[i, 0], px[:, 1] - means2d[i, 1]
        sigma = 0.5 * (conics[i, 0] * dx**2 + conics[i, 2] * dy**2) + conics[i, 1] * dx * dy
        alpha = (opacities[i] * torch.exp(-sigma)).clamp_max(ALPHA_MAX)
        use = (sigma >= 0) & (alpha >= ALPHA_MIN) & ~done
        next_T = T * (1.0 - alpha)
        stop = use & (next_T.detach() <= T_MIN)
        done = done | stop
        use = use & ~stop
        acc = acc + torch.where(use, alpha * T, torch.zeros_like(T))[:, None] * colors[i]
        T = torch.where(use, next_T, T)
    return _finish(acc.reshape(height, width, -1), T.reshape(height, width), background)
