"""``zoo bench splat``: forward + backward time and peak memory of the tile rasteriser vs the dense reference.

Random scenes of N Gaussians in front of one camera, sized so each covers a few pixels (as in a trained scene).
Every measurement (one forward + backward of one render) runs in a fresh subprocess, after a warm-up render of a
tiny scene (the first checkpointed call imports ``torch._dynamo``: seconds), so its peak resident memory (CPU) or
peak allocated memory (CUDA) is its own; ``--repeat N`` measures each (image size, N) N times, the methods
interleaved (tiles, dense, tiles, dense, ...) so that a shared machine's load hits both alike, and reports the
median. On CPU the children run with ``MALLOC_MMAP_THRESHOLD_=1048576`` (``--glibc-default`` turns it off):
glibc then returns every freed block of 1 MiB or more to the system, so the peak RSS growth measures what the
rasteriser holds, not heap fragmentation (with the default, freed chunks stay in the heap: 7 GB for the dense
reference at 200 px / 5000 Gaussians); the page faults this costs slow both methods. Prints a table and writes a
benchmark record (``zoo.bench.provenance``: commit, source hash, machine, command, every measurement):
``--leaderboard`` into ``leaderboard/results/bench/splat/``, where the MoE-GS page reads its rasteriser claim;
``--out FILE`` (or ``--json FILE``); else ``runs/bench/splat/``.

    zoo bench splat --sizes 200 --gaussians 20000 --methods tiles,dense --repeat 3 --leaderboard

``--train-steps`` instead times training steps on the D-NeRF standup scene at ``--downscale``, with randomly
initialised experts of each ``--gaussians`` count (what the benchmark rows are sized from): one ``ExpertGS`` step
per expert and one ``MoEGS`` router step per router mode (median of ``--repeat`` steps after a warm-up step), on
each of ``--devices`` (the rasteriser ``"auto"`` picks: the tile rasteriser on CPU, gsplat's kernel on CUDA), with
the ratio to the first device printed beside each step.

    zoo bench splat --train-steps --downscale 8 --gaussians 5000 --repeat 5
    zoo bench splat --train-steps --downscale 2 --gaussians 20000 --devices cpu,cuda   # on a GPU machine
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import resource
import sys
import time
from queue import Empty

from zoo.bench.provenance import BenchRun, add_output_arguments, output_path

METHODS = ("tiles", "dense", "gsplat_cuda")
MODULE = "zoo_tasks.splatting.bench"  # with the rasterisers and the training step it times (its closure)
WARM_UP = (16, 64)  # image size, Gaussians of the warm-up render in each measurement's process


def make_scene(num: int, size: int, seed: int = 0, device: str = "cpu"):
    """N Gaussians in a unit ball 4 units in front of a camera with a 50-degree field of view, screen radius ~2-6 px
    at 200 px (scaled with the image)."""
    import torch

    g = torch.Generator().manual_seed(seed)
    means = torch.randn(num, 3, generator=g) * 0.4
    quats = torch.randn(num, 4, generator=g)
    scales = torch.rand(num, 3, generator=g) * 0.01 + 0.004  # world units
    opacities = torch.rand(num, generator=g) * 0.8 + 0.1
    colors = torch.rand(num, 3, generator=g)
    viewmat = torch.eye(4)
    viewmat[2, 3] = 4.0
    focal = 0.5 * size / 0.466  # tan(25 deg)
    K = torch.tensor([[focal, 0, size / 2], [0, focal, size / 2], [0, 0, 1.0]])
    return [t.to(device) for t in (means, quats, scales, opacities, colors, viewmat, K)]


def _render_once(method: str, size: int, num: int) -> float:
    """Seconds of one forward + backward render of a random scene (``make_scene``)."""
    import torch

    from zoo_tasks.splatting.render import render

    device = "cuda" if method == "gsplat_cuda" else "cpu"
    means, quats, scales, opac, colors, viewmat, K = make_scene(num, size, device=device)
    for t in (means, scales, opac, colors):
        t.requires_grad_(True)
    if device == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    start = time.perf_counter()
    out, alpha = render(means, quats, scales, opac, colors, viewmat, K, size, size, backend=method)
    (out.sum() + alpha.sum()).backward()
    if device == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - start


def _measure(method: str, size: int, num: int, queue) -> None:
    import torch

    torch.set_num_threads(1)
    _render_once(method, *WARM_UP)
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # after the warm-up: the tiny scene's peak is below
    seconds = _render_once(method, size, num)
    if method == "gsplat_cuda":
        peak_mb = torch.cuda.max_memory_allocated() / 2**20
    else:
        peak_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) / 1024  # KiB on Linux
    queue.put({"method": method, "size": size, "gaussians": num, "seconds": seconds, "peak_mb": peak_mb})


def measure(method: str, size: int, num: int, glibc_default: bool = False) -> dict:
    """One measurement (after a warm-up render of a tiny scene) in a fresh spawned process."""
    if not glibc_default:
        os.environ.setdefault("MALLOC_MMAP_THRESHOLD_", str(1 << 20))  # inherited by the spawned child
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=_measure, args=(method, size, num, queue))
    proc.start()
    while True:  # a child that dies (an import error, a CUDA fault) puts nothing: fail instead of waiting forever
        try:
            result = queue.get(timeout=5)
            break
        except Empty:
            if not proc.is_alive():
                died = f"the {method} measurement at {size} px / {num} Gaussians died (exit {proc.exitcode})"
                raise RuntimeError(died) from None
    proc.join()
    return result


def _median(values: list[float]) -> float:
    return sorted(values)[len(values) // 2]


def train_steps(downscale: int, num: int, repeat: int, device: str = "cpu") -> list[dict]:
    """Seconds per training step of each expert and each router mode, in this process, on ``device`` (rasteriser
    ``"auto"``: the tile rasteriser on CPU, gsplat's CUDA kernel on a GPU)."""
    import tempfile
    from pathlib import Path

    import torch
    from pytorch_lightning.utilities import move_data_to_device

    from zoo_tasks.splatting.data import DNeRFDataModule
    from zoo_tasks.splatting.experts import EXPERTS
    from zoo_tasks.splatting.exports import save_export
    from zoo_tasks.splatting.module import ExpertGS
    from zoo_tasks.splatting.moe import MoEGS
    from zoo_tasks.splatting.router import MODES

    torch.set_num_threads(1)
    batch = move_data_to_device(next(iter(DNeRFDataModule(downscale=downscale).train_dataloader())), device)
    rows, exports = [], []
    sync = torch.cuda.synchronize if torch.device(device).type == "cuda" else (lambda: None)

    def timed(step) -> float:
        times = []
        for i in range(repeat + 1):
            sync()
            start = time.perf_counter()
            step()
            sync()
            if i:
                times.append(time.perf_counter() - start)
        return _median(times)

    with tempfile.TemporaryDirectory() as tmp:
        for kind in EXPERTS:
            torch.manual_seed(0)
            module = ExpertGS(expert=kind, num_gaussians=num, backend="auto").to(device)
            opt = module.configure_optimizers()

            def step(module=module, opt=opt):
                opt.zero_grad()
                module.training_step(batch, 0)["loss"].backward()
                opt.step()

            rows.append({"step": f"expert {kind}", "seconds": timed(step)})
            hp = {"expert": kind, "num_gaussians": num}
            exports.append(str(save_export(Path(tmp) / f"{kind}.pt", hp, module.model.state_dict(), 0)))
        for mode in MODES:
            moe = MoEGS(experts=exports, router_mode=mode, backend="auto").to(device)
            opt = moe.configure_optimizers()

            def step(moe=moe, opt=opt):
                opt.zero_grad()
                moe.loss_and_routing(batch)[0].backward()
                opt.step()

            rows.append({"step": f"router {mode}", "seconds": timed(step)})
    for row in rows:
        row.update(downscale=downscale, gaussians=num, device=device)
    return rows


def _ints(text: str) -> list[int]:
    return [int(v) for v in text.split(",") if v]


def _train_steps_main(ns: argparse.Namespace) -> dict:
    """``--train-steps``: every step timed on every device, printed with its ratio to the first device."""
    devices = [d for d in ns.devices.split(",") if d]
    rows = []
    for num in _ints(ns.gaussians):
        per_device = [train_steps(ns.downscale, num, max(1, ns.repeat), d) for d in devices]
        for first, *others in zip(*per_device, strict=True):
            for r in (first, *others):
                ratio = f"  {first['seconds'] / r['seconds']:.1f}x vs {first['device']}" if r is not first else ""
                print(
                    f"{r['step']:<22} {r['device']:<5} downscale {r['downscale']} {r['gaussians']:>6} Gaussians "
                    f"{r['seconds']:.4f} s/step{ratio}"
                )
                rows.append(r)
    return {"mode": "train-steps", "rows": rows}


def _cell(size: int, num: int, methods: list[str], runs: list[dict]) -> dict:
    """The medians of one (image size, Gaussians) cell and each method's speed-up over the first method."""
    cell: dict = {"size": size, "gaussians": num}
    for m in methods:
        mine = [r for r in runs if r["method"] == m]
        cell[f"{m}_s"] = _median([r["seconds"] for r in mine])
        cell[f"{m}_peak_mb"] = _median([r["peak_mb"] for r in mine])
    for m in methods[1:]:  # >1: the first method is that many times faster than m
        cell[f"speedup_vs_{m}"] = cell[f"{m}_s"] / cell[f"{methods[0]}_s"]
    return cell


def _raster_main(ns: argparse.Namespace, methods: list[str]) -> dict:
    """The rasterisers side by side: every (size, Gaussians) cell, ``--repeat`` interleaved measurements each."""
    cells, measurements = [], []
    for size in _ints(ns.sizes):
        for num in _ints(ns.gaussians):
            runs = []
            for repeat in range(max(1, ns.repeat)):
                for m in methods:
                    runs.append({**measure(m, size, num, ns.glibc_default), "repeat": repeat})
                    print(f"{size:>5} px {num:>7} Gaussians {m:<12} repeat {repeat}: {runs[-1]['seconds']:.3f} s, "
                          f"{runs[-1]['peak_mb']:.1f} MB", flush=True)  # fmt: skip
            measurements += runs
            cells.append(_cell(size, num, methods, runs))
            ratios = "".join(f", {methods[0]} {cells[-1][f'speedup_vs_{m}']:.3g}x faster than {m}" for m in methods[1:])
            print(f"{size:>5} px {num:>7} Gaussians: median of {max(1, ns.repeat)}{ratios}", flush=True)
    return {"mode": "raster", "methods": methods, "cells": cells, "measurements": measurements}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="zoo bench splat", description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="64,100,200", help="image sizes (square), comma-separated")
    p.add_argument("--gaussians", default="5000,20000", help="Gaussian counts, comma-separated")
    p.add_argument("--methods", default="tiles,dense", help=f"of {', '.join(METHODS)}")
    p.add_argument("--repeat", type=int, default=1, help="measurements per cell and method; the median is reported")
    p.add_argument("--glibc-default", action="store_true", help="keep glibc's malloc settings (RSS then overstates)")
    p.add_argument("--train-steps", action="store_true", help="time expert and router training steps on standup")
    p.add_argument("--downscale", type=int, default=8, help="with --train-steps: D-NeRF downscale factor")
    p.add_argument("--devices", default="cpu", help="with --train-steps: devices to time side by side, e.g. cpu,cuda")
    add_output_arguments(p, aliases=("--json",))
    ns = p.parse_args(argv)
    methods = [m for m in ns.methods.split(",") if m]
    unknown = sorted(set(methods) - set(METHODS))
    if unknown and not ns.train_steps:
        print(f"zoo bench splat: unknown method(s) {unknown}; choose from {', '.join(METHODS)}", file=sys.stderr)
        return 2
    bench = BenchRun("splat", [MODULE], argv)
    result = _train_steps_main(ns) if ns.train_steps else _raster_main(ns, methods)
    settings = {k: v for k, v in vars(ns).items() if k not in ("out", "leaderboard")}
    bench.write({**result, "settings": settings}, output_path("splat", ns.out, ns.leaderboard), threads=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
