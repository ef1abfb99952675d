"""The physical limit of one MoE FFN step on this machine: a small roofline from measured bandwidth and GEMM rate.

``limit_s = max(FLOPs / GEMM rate, bytes / memory bandwidth)`` for forward + backward of the expert FFNs:

- FLOPs: every routed slot runs ``x @ w1`` and ``h @ w2`` once forward and twice backward (input and weight
  gradients), ``6 * slots * (d*h + h*o)``.
- Bytes (compulsory traffic, fp32): the weights are read forward, read again for the input gradient and their
  gradients written once, ``3 * 4 * E * (d*h + h*o)``; the activations (sorted input, hidden, output) are read or
  written about six times, ``6 * 4 * slots * (d + h + o)``.
- GEMM rate: the best of a few square ``mm`` of size 2048 on the torch threads in use; bandwidth: the best
  STREAM-style triad ``a = b + 2 c`` over 3 x 128 MiB arrays (3 arrays moved per element).

A second, shape-aware bound: each expert's GEMMs have only ``slots / E`` rows (64 at E=256), and its weight
gradients contract over those rows, where even one sequential GEMM runs below the big-GEMM rate.
``expert_gemm_seconds`` times one thread on the six GEMM shapes of one expert; ``E * that / threads`` is the step
time of perfectly parallel per-expert GEMMs with no other work.
"""

from __future__ import annotations

import time

import torch


def gemm_rate(n: int = 2048, reps: int = 3) -> float:
    """Best FLOP/s of ``(n, n) @ (n, n)`` over ``reps`` runs after a warm-up."""
    a, b = torch.randn(n, n), torch.randn(n, n)
    a @ b
    best = min(_time(lambda: a @ b) for _ in range(reps))
    return 2 * n**3 / best


def expert_gemm_seconds(rows: int, dim: int, hidden: int, reps: int = 3) -> float:
    """Best single-thread time of the six GEMMs one expert runs per step (the bench's thread count is restored).

    Layer 1 (w1: dim x hidden) and layer 2 (w2: hidden x dim), each forward ``(rows, a) @ (a, b)``, input gradient
    ``(rows, b) @ (b, a)`` and weight gradient ``(a, rows) @ (rows, b)`` (contracting over the expert's rows)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    rows = max(1, rows)
    shapes = [(rows, dim, hidden), (rows, hidden, dim), (dim, rows, hidden)]  # layer 1; layer 2 swaps dim/hidden
    shapes += [(rows, hidden, dim), (rows, dim, hidden), (hidden, rows, dim)]
    mats = [(torch.randn(m, k), torch.randn(k, n)) for m, k, n in shapes]
    try:
        total = 0.0
        for a, b in mats:
            a @ b
            total += min(_time(lambda a=a, b=b: a @ b) for _ in range(reps * 3))
    finally:
        torch.set_num_threads(threads)
    return total


def triad_bandwidth(mib: int = 128, reps: int = 5) -> float:
    """Best bytes/s of ``a = b + 2 c`` (reads b, c; writes a) on float32 arrays of ``mib`` MiB each."""
    n = mib * 2**20 // 4
    a, b, c = torch.empty(n), torch.rand(n), torch.rand(n)
    torch.add(b, c, alpha=2.0, out=a)
    best = min(_time(lambda: torch.add(b, c, alpha=2.0, out=a)) for _ in range(reps))
    return 3 * 4 * n / best


def _time(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def step_cost(tokens: int, dim: int, hidden: int, top_k: int, experts: int) -> dict[str, float]:
    """FLOPs and compulsory bytes of one forward + backward of ``experts`` FFN experts (see the module doc)."""
    slots = tokens * top_k
    per_slot = dim * hidden + hidden * dim
    return {
        "flops": 6.0 * slots * per_slot,
        "bytes": 3.0 * 4 * experts * per_slot + 6.0 * 4 * slots * (dim + hidden + dim),
    }


def limit(cost: dict[str, float], rate: float, bandwidth: float) -> dict[str, float]:
    """The step's minimum time: the slower of its compute time and its memory time, in ms."""
    compute_ms, memory_ms = 1e3 * cost["flops"] / rate, 1e3 * cost["bytes"] / bandwidth
    return {"compute_ms": compute_ms, "memory_ms": memory_ms, "limit_ms": max(compute_ms, memory_ms)}
