"""`zoo bench moe`: forward+backward time and peak memory of `zoo.moe.MoE` vs reference MoE layers.

Side by side in one process, fp32 CPU, interleaved repetitions (the median is reported, because other
jobs share the CPU). Rows: (a) dense FFN with hidden k*h (the floor), ours, (b) per-expert loop with
boolean-mask token selection, (c) GShard one-hot einsum with capacity 1.25 and groups of 1024, (d) the
naive per-expert slice of a stacked weight, plus two dispatch variants (``torch._grouped_mm``, an
autograd loop over ``unbind``) that justify ours.

Peak memory: the process's peak resident set (Linux ``VmHWM``, reset through ``/proc/self/clear_refs``
before each measured step) minus the resident set just before the step, i.e. what one forward+backward
adds on top of the parameters (activations, gradients, temporaries), with glibc's mmap threshold fixed at
256 KiB so freed tensors leave the RSS at once. ``tracemalloc`` cannot see torch's CPU allocator, hence RSS.

    python -m zoo.bench.moe [--quick] [--out PATH.json] [--experts 8,64,256] [--reps 5]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch
from torch import nn

from zoo.bench.moe_baselines import DenseFloor, GroupedMM, GShardEinsum, LoopMask, NaiveSlice, OutputOnly, UnbindLoop
from zoo.moe import MoE

ROWS = {
    "floor": "(a) dense FFN, hidden k*h (floor)",
    "ours": "ours: zoo.moe.MoE (sorted segments, custom autograd)",
    "loop_mask": "(b) loop over experts, boolean-mask tokens",
    "gshard": "(c) GShard one-hot einsum, cf 1.25, groups of 1024",
    "naive_slice": "(d) loop slicing stacked weight per expert",
    "grouped_mm": "variant: torch._grouped_mm segments",
    "unbind": "variant: autograd loop over weight.unbind(0)",
}
REPO = Path(__file__).resolve().parents[2]


def _rss_kb(field: str) -> int | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def _fixed_mmap_threshold() -> bool:
    """Make glibc return large freed blocks to the OS at once (fixed 256 KiB mmap threshold), so that RSS
    follows live tensors instead of glibc's growing dynamic threshold keeping them resident."""
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
        return bool(libc.mallopt(-3, 256 * 1024)) and bool(libc.mallopt(-1, 1024 * 1024))
    except (OSError, AttributeError):
        return False


def _reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def build(E: int, dim: int, hidden: int, top_k: int, rows: list[str]) -> dict[str, nn.Module]:
    torch.manual_seed(0)
    moe = MoE(dim, hidden, E, top_k=top_k, router="topk", experts="ffn")
    ours = OutputOnly(moe)
    ex, gate = moe.experts, moe.router.gate
    shared = (gate, ex.w1, ex.b1, ex.w2, ex.b2, top_k)
    makers = {
        "floor": lambda: DenseFloor(dim, top_k * hidden),
        "ours": lambda: ours,
        "loop_mask": lambda: LoopMask(*shared),
        "gshard": lambda: GShardEinsum(*shared),
        "naive_slice": lambda: NaiveSlice(*shared),
        "grouped_mm": lambda: GroupedMM(*shared),
        "unbind": lambda: UnbindLoop(*shared),
    }
    return {r: makers[r]() for r in rows}


def step(model: nn.Module, x: torch.Tensor, g: torch.Tensor) -> tuple[float, float, int | None]:
    """One forward+backward; returns (wall seconds, process CPU seconds, extra peak RSS bytes or None)."""
    for p in model.parameters():
        p.grad = None
    x.grad = None
    before = _rss_kb("VmRSS")
    can_peak = _reset_peak()
    t0, c0 = time.perf_counter(), time.process_time()
    model(x).backward(g)
    dt_s, cpu_s = time.perf_counter() - t0, time.process_time() - c0
    peak = _rss_kb("VmHWM") if can_peak else None
    for p in model.parameters():
        p.grad = None
    return dt_s, cpu_s, (None if peak is None or before is None else max(0, peak - before) * 1024)


def bench_one(E: int, args, rows: list[str]) -> dict:
    if E > args.naive_max_experts:  # its O(E^2) backward takes minutes per step: not run
        rows = [r for r in rows if r != "naive_slice"]
    models = build(E, args.dim, args.hidden, args.top_k, rows)
    torch.manual_seed(1)
    x = torch.randn(args.tokens, args.dim, requires_grad=True)
    g = torch.randn(args.tokens, args.dim)
    with torch.no_grad():
        ref = models["ours"](x) if "ours" in models else None
    diffs = {}
    for name, m in models.items():
        if ref is not None and name not in ("floor", "gshard", "ours"):
            with torch.no_grad():
                diffs[name] = float((m(x) - ref).abs().max())
        step(m, x, g)  # warm-up
    times: dict[str, list[float]] = {r: [] for r in models}
    cpus: dict[str, list[float]] = {r: [] for r in models}
    mems: dict[str, list[int]] = {r: [] for r in models}
    order = list(models)
    for rep in range(args.reps):
        for name in order[rep % len(order) :] + order[: rep % len(order)]:  # rotate: fair under load drift
            t, c, mem = step(models[name], x, g)
            times[name].append(t)
            cpus[name].append(c)
            if mem is not None:
                mems[name].append(mem)
    out = {}
    floor = statistics.median(times["floor"]) if "floor" in times else None
    floor_cpu = statistics.median(cpus["floor"]) if "floor" in cpus else None
    for name in models:
        med = statistics.median(times[name])
        out[name] = {
            "ms": round(1e3 * med, 1),
            "ms_all": [round(1e3 * t, 1) for t in times[name]],
            "ratio_to_floor": round(med / floor, 3) if floor else None,
            "cpu_ms": round(1e3 * statistics.median(cpus[name]), 1),
            "cpu_ratio_to_floor": round(statistics.median(cpus[name]) / floor_cpu, 3) if floor_cpu else None,
            "peak_extra_mib": round(max(mems[name]) / 2**20, 1) if mems[name] else None,
            "max_abs_diff_vs_ours": diffs.get(name),
        }
    del models
    return out


NOTES = """\
- **Rows.** (a) is the floor: a dense FFN with hidden k·h has exactly the active FLOPs of a top-k MoE and no
  routing. *ours* = `zoo.moe.MoE(router="topk", experts="ffn")` including its router and the aux losses
  every router attaches (since zoo.moe API v2 routing statistics are computed on demand, not in forward).
  (b)-(d) and the two variants share the same gate and stacked weights as *ours*; their outputs are checked
  against ours (`max_abs_diff_vs_ours` in the JSON; (c) differs by design: it drops tokens).
- **Why ours is a custom autograd loop.** `zoo.moe.segment_mm` runs one `mm` per expert segment into one
  preallocated output and writes every expert's weight gradient straight into one `[E, d, h]` buffer.
  (d) shows the trap it avoids: slicing `w[e]` inside autograd materialises a full `[E, d, h]` gradient per
  slice (O(E²) traffic); it is skipped at E=256, where one step takes minutes. `weight.unbind(0)` avoids
  the O(E²) but copies all gradients once more in its `stack` backward. `torch._grouped_mm` exists in this
  torch and runs on CPU; in CPU time it was never faster than the loop here (see the second table), so the
  loop is the default and the variant row stays as evidence.
- **Why E=256 costs more than E=8 at equal FLOPs.** At E=256 the expert weights are 1 GiB of fp32 and
  their gradients another 1 GiB: each step must stream the weights twice (forward, input-gradient) and
  write the weight gradients once, ~3 GiB of memory traffic the dense floor (8 MiB of weights) never pays,
  and each expert sees only ~64 rows, so its matmuls run at lower efficiency. This is inherent to fp32
  CPU training at this size, not to the dispatch.
- **The misses.** At E=64 ours is ~1.3× the floor: each expert sees ~256 rows, where per-expert GEMMs
  run a little below the efficiency of one big GEMM, plus sort/gather/scatter of 16k token slots. At E=256
  the memory traffic above dominates; ≥ 2× over (c) then falls to ~1.8× because (c)'s cost is nearly flat in
  E while ours pays the weight traffic too. Closing these gaps would need bf16/fused kernels, not dispatch.
- **Shared CPU.** Other jobs ran on the same 2 cores (see load average above), so absolute times are
  inflated and noisy; rows are interleaved in rotating order inside each repetition so that load drift
  hits all rows alike, and the median is reported (all samples are in the JSON). The measurement runs
  with `OMP_WAIT_POLICY=PASSIVE`: with spinning OpenMP threads on an oversubscribed CPU, every one of the
  hundreds of small per-expert matmuls waits for its partner thread to be scheduled, which penalises
  loop-style dispatch (ours, (b), (d)) 2-5× against few-big-op implementations ((a), (c)).
"""


def _load(avg) -> str:
    return "n/a" if not avg else f"{avg[0]:.1f}"


def render_markdown(result: dict) -> str:
    es = result["config"]["experts"]
    res = result["results"]
    lines = [
        "# MoE layer benchmark (`zoo bench moe`)",
        "",
        f"Forward+backward, fp32 CPU, {result['config']['tokens']} tokens, dim {result['config']['dim']}, "
        f"hidden {result['config']['hidden']}, top-{result['config']['top_k']}. "
        f"Median of {result['config']['reps']} interleaved repetitions per cell (other jobs share this CPU, "
        "so single timings are noisy; all rows are measured side by side in one process).",
        "",
        f"Machine: {result['machine']['cpu']}, {result['machine']['threads']} torch threads, "
        f"torch {result['machine']['torch']}, Python {result['machine']['python']}, "
        f"OMP_WAIT_POLICY={result['machine']['omp_wait_policy']}, load average at start/end "
        f"{_load(result['machine']['load_avg_start'])} / {_load(result['machine']['load_avg_end'])} "
        f"on {result['machine']['cores']} cores; {result['date']}.",
        "",
        "Peak memory = peak RSS during one step (Linux VmHWM, reset via /proc/self/clear_refs) minus RSS "
        "before it (glibc mmap threshold fixed at 256 KiB so freed tensors leave RSS): activations + "
        "gradients + temporaries, not the parameters. `tracemalloc` cannot see torch's CPU allocator.",
        "",
        "| implementation | "
        + " | ".join(f"E={e} ms (× floor)" for e in es)
        + " | "
        + " | ".join(f"E={e} peak MiB" for e in es)
        + " |",
        "|---|" + "---:|" * (2 * len(es)),
    ]
    for row, label in ROWS.items():
        if not any(row in res[str(e)] for e in es):
            continue
        cells, mems = [], []
        for e in es:
            r = res[str(e)].get(row)
            skipped = r is None or not r["ms_all"]
            cells.append("—" if skipped else f"{r['ms']:.0f} ({r['ratio_to_floor']:.2f}×)")
            mems.append("—" if skipped or r["peak_extra_mib"] is None else f"{r['peak_extra_mib']:.0f}")
        lines.append(f"| {label} | " + " | ".join(cells) + " | " + " | ".join(mems) + " |")
    if all("cpu_ms" in r for e in es for r in res[str(e)].values()):
        lines += [
            "",
            "Process CPU time of the same steps (both threads summed; with passive OpenMP waits it counts "
            "work, not time spent waiting for a core, so it is far less sensitive to the other jobs):",
            "",
            "| implementation | " + " | ".join(f"E={e} CPU ms (× floor)" for e in es) + " |",
            "|---|" + "---:|" * len(es),
        ]
        for row, label in ROWS.items():
            cells = []
            for e in es:
                r = res[str(e)].get(row)
                cells.append("—" if r is None else f"{r['cpu_ms']:.0f} ({r['cpu_ratio_to_floor']:.2f}×)")
            if any(c != "—" for c in cells):
                lines.append(f"| {label} | " + " | ".join(cells) + " |")
    lines += ["", "## Targets", ""] + [f"- {t}" for t in result["targets"]]
    lines += ["", "## Notes", "", NOTES.rstrip()]
    lines += ["", f"Command: `{result['command']}`", ""]
    return "\n".join(lines)


def check_targets(result: dict) -> list[str]:
    res, es = result["results"], result["config"]["experts"]
    notes = []

    def get(e, row):
        r = res.get(str(e), {}).get(row)
        return r if r and r["ms_all"] else None

    for e in (64, 256):
        r = get(e, "ours")
        if r:
            ok = r["ratio_to_floor"] <= 1.2
            notes.append(f"≤ 1.2× floor at E={e}: {r['ratio_to_floor']:.2f}× — {'met' if ok else 'MISSED'}")
    worst = None
    for e in es:
        o, c = get(e, "ours"), get(e, "gshard")
        if o and c:
            sp = c["ms"] / o["ms"]
            worst = sp if worst is None else min(worst, sp)
    if worst is not None:
        notes.append(f"≥ 2× faster than (c) at every E: worst {worst:.2f}× — {'met' if worst >= 2 else 'MISSED'}")
    o8, o256 = get(8, "ours"), get(256, "ours")
    if o8 and o256:
        ratio = o256["ms"] / o8["ms"]
        notes.append(f"E=256 within 1.3× of E=8: {ratio:.2f}× — {'met' if ratio <= 1.3 else 'MISSED'}")
    return notes


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="zoo bench moe", description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="tiny sizes, 2 reps: a smoke run, not a measurement")
    p.add_argument("--out", type=Path, default=None, help="results JSON (default leaderboard/results/...)")
    p.add_argument("--markdown", type=Path, default=None, help="table (default leaderboard/moe_layer.md)")
    p.add_argument("--experts", type=str, default=None, help="comma-separated E values")
    p.add_argument("--reps", type=int, default=None)
    p.add_argument("--tokens", type=int, default=None)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument(
        "--naive-max-experts",
        type=int,
        default=64,
        help="skip (d) above this E: its O(E^2) backward takes minutes per step",
    )
    p.add_argument(
        "--omp-wait-policy",
        default="PASSIVE",
        help="run the measurement in a child process with this OMP_WAIT_POLICY ('keep': in this process). "
        "PASSIVE: on a shared, oversubscribed CPU, spinning OpenMP threads otherwise steal each other's time",
    )
    p.add_argument("--rows", type=str, default=",".join(ROWS))
    p.add_argument("--render", type=Path, default=None, help="only re-render the table from this JSON")
    args = p.parse_args(argv)
    if args.render:
        result = json.loads(args.render.read_text())
        result["targets"] = check_targets(result)
        (args.markdown or REPO / "leaderboard" / "moe_layer.md").write_text(render_markdown(result))
        return 0
    policy = os.environ.get("OMP_WAIT_POLICY")
    # a --quick smoke run is not a measurement: no child process
    if not args.quick and args.omp_wait_policy.upper() != "KEEP" and policy != args.omp_wait_policy:
        raw = list(argv if argv is not None else sys.argv[1:])
        env = dict(os.environ, OMP_WAIT_POLICY=args.omp_wait_policy)
        return subprocess.call([sys.executable, "-m", "zoo.bench.moe", *raw], env=env, cwd=str(REPO))
    if args.quick:
        args.dim, args.hidden, args.top_k = 32, 64, 2
        args.tokens = args.tokens or 256
        experts = [4, 8]
        args.reps = args.reps or 2
    else:
        args.dim, args.hidden, args.top_k = 512, 1024, 2
        args.tokens = args.tokens or 8192
        experts = [8, 64, 256]
        args.reps = args.reps or 5
    if args.experts:
        experts = [int(e) for e in args.experts.split(",")]
    rows = [r for r in args.rows.split(",") if r]
    if not hasattr(torch, "_grouped_mm") and "grouped_mm" in rows:
        rows.remove("grouped_mm")
    torch.set_num_threads(args.threads)
    fixed_mmap = _fixed_mmap_threshold()
    date = dt.date.today().isoformat()
    result = {
        "date": date,
        "command": "python -m zoo.bench.moe " + " ".join(argv if argv is not None else sys.argv[1:]),
        "config": {
            "tokens": args.tokens,
            "dim": args.dim,
            "hidden": args.hidden,
            "top_k": args.top_k,
            "experts": experts,
            "reps": args.reps,
            "quick": args.quick,
            "dtype": "float32",
        },
        "machine": {
            "cpu": cpu_model(),
            "threads": torch.get_num_threads(),
            "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", "default"),
            "cores": os.cpu_count(),
            "torch": torch.__version__,
            "python": platform.python_version(),
            "load_avg_start": os.getloadavg() if hasattr(os, "getloadavg") else None,
        },
        "memory_method": "peak RSS (VmHWM after /proc/self/clear_refs reset) minus RSS before the step"
        + ("; glibc mmap threshold fixed at 256 KiB" if fixed_mmap else ""),
        "results": {},
    }
    for E in experts:
        print(f"E={E} ...", flush=True)
        result["results"][str(E)] = bench_one(E, args, rows)
        for name, r in result["results"][str(E)].items():
            print(
                f"  {name:12s} {r['ms']:9.1f} ms  {r['ratio_to_floor']}x floor  +{r['peak_extra_mib']} MiB",
                flush=True,
            )
    result["machine"]["load_avg_end"] = os.getloadavg() if hasattr(os, "getloadavg") else None
    result["targets"] = check_targets(result)
    out = args.out or REPO / "leaderboard" / "results" / "moe_layer" / f"{date}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    md = render_markdown(result)
    md_path = args.markdown or (
        out.with_suffix(".md") if args.quick or args.out else REPO / "leaderboard" / "moe_layer.md"
    )
    md_path.write_text(md)
    print(md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
