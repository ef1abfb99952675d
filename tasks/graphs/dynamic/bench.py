"""Plain vs fast Riemannian attention of DyGMoCE's curvature experts, time and peak memory side by side.

    zoo bench dygmoce [--lengths 64] [--batch 32] [--dim 200] [--heads 2] [--curvatures -1 0 1] [--repeats 3]
                      [--no-backward] [--threads 1] [--leaderboard | --out FILE]

One ``CurvatureAttention`` expert (``riemann.py``) per curvature, forward + backward on (batch, L, dim) inputs
after a warm-up pass on a batch of 2 (geoopt's TorchScript functions compile on first use), the
two implementations interleaved (plain, fast, plain, ...) so that a shared machine's load hits both alike. The
task's sequence length is L = 2 x 32 / patch 1 = 64 (DyGFormer on UCI: source + destination first-hop sequences);
dim 200 = 4 channels x 50, 2 heads (DyGLib's DyGFormer defaults). Peak memory: on CUDA
``torch.cuda.max_memory_allocated``; on CPU the rise of the peak resident set size (``ru_maxrss``) of a fresh
subprocess per measurement, above its level after building the inputs. Prints the table and the ratios and
writes a benchmark record (``zoo.bench.provenance``: commit, source hash, machine, command, every measurement):
``--leaderboard`` into ``leaderboard/results/bench/dygmoce/``, where the DyGMoCE page reads its fast-attention
claim; ``--out FILE``; else ``runs/bench/dygmoce/``.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import statistics
import time

from zoo.bench.provenance import BenchRun, add_output_arguments, output_path

IMPLS = ("plain", "fast")
MODULE = "zoo_tasks.graphs.dynamic.bench"  # with riemann.py (its closure): what the record's source hash covers


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="zoo bench dygmoce", description=__doc__.split("\n\n")[0])
    p.add_argument("--lengths", type=int, nargs="+", default=[64], help="sequence lengths (task: 64)")
    p.add_argument("--batch", type=int, default=32, help="pairs per batch (the task trains on 200)")
    p.add_argument("--dim", type=int, default=200)
    p.add_argument("--heads", type=int, default=2)
    p.add_argument("--curvatures", type=float, nargs="+", default=[-1.0, 0.0, 1.0])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--no-backward", action="store_true", help="time the forward pass only")
    p.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    p.add_argument("--device", default="cpu")
    add_output_arguments(p)
    return p


def _measure(impl: str, length: int, curvature: float, args: argparse.Namespace, queue) -> None:
    import resource

    import torch

    from zoo_tasks.graphs.dynamic.riemann import CurvatureAttention

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    device = torch.device(args.device)
    module = CurvatureAttention(args.dim, args.heads, curvature, impl=impl).to(device)
    warm = torch.randn(2, length, args.dim, device=device, requires_grad=not args.no_backward)
    if args.no_backward:
        module(warm)
    else:
        module(warm).square().mean().backward()  # TorchScript'ed geoopt functions compile on their first calls
    module.zero_grad(set_to_none=True)
    x = torch.randn(args.batch, length, args.dim, device=device, requires_grad=not args.no_backward)
    cuda = device.type == "cuda"
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
    else:
        base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    start = time.perf_counter()
    y = module(x)
    if not args.no_backward:
        y.square().mean().backward()
    if cuda:
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    if cuda:
        peak = torch.cuda.max_memory_allocated() - base
    else:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - base
    queue.put({"seconds": seconds, "peak_mb": peak / 2**20})


def measure(impl: str, length: int, curvature: float, args: argparse.Namespace) -> dict:
    """One forward(+backward) in a fresh subprocess: {"seconds", "peak_mb"}."""
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=_measure, args=(impl, length, curvature, args, queue))
    proc.start()
    result = queue.get()
    proc.join()
    return result


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    bench = BenchRun("dygmoce", [MODULE], argv)
    rows, measurements = [], []
    for length in args.lengths:
        for curvature in args.curvatures:
            runs: dict[str, list[dict]] = {i: [] for i in IMPLS}
            for repeat in range(args.repeats):
                for impl in IMPLS:
                    runs[impl].append(measure(impl, length, curvature, args))
                    measurements.append({"length": length, "curvature": curvature, "repeat": repeat, "impl": impl})
                    measurements[-1].update(runs[impl][-1])
            row = {"length": length, "curvature": curvature}
            for impl in IMPLS:
                row[f"{impl}_s"] = statistics.median(r["seconds"] for r in runs[impl])
                row[f"{impl}_peak_mb"] = statistics.median(r["peak_mb"] for r in runs[impl])
            row["time_saving"] = 1 - row["fast_s"] / row["plain_s"]
            row["memory_saving"] = 1 - row["fast_peak_mb"] / row["plain_peak_mb"] if row["plain_peak_mb"] > 0 else None
            rows.append(row)
            mem = f"{row['memory_saving']:.1%}" if row["memory_saving"] is not None else "—"
            print(
                f"L={length:4d} κ={curvature:+.1f}  plain {row['plain_s']:.3f} s {row['plain_peak_mb']:8.1f} MB | fast "
                f"{row['fast_s']:.3f} s {row['fast_peak_mb']:8.1f} MB | faster by {row['time_saving']:.1%}, "
                f"memory -{mem}",
                flush=True,
            )
    import zoo_tasks.graphs.dynamic.riemann  # noqa: F401  (loaded here too: the record's versions name geoopt)

    result = {
        "benchmark": "DyGMoCE plain vs fast Riemannian attention (one expert, forward"
        + ("" if args.no_backward else " + backward")
        + ")",
        "settings": {k: v for k, v in vars(args).items() if k not in ("out", "leaderboard")},
        "rows": rows,
        "measurements": measurements,
    }
    bench.write(result, output_path("dygmoce", args.out, args.leaderboard), threads=args.threads)
    return 0
