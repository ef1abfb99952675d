"""`zoo bench moe`: forward+backward time and peak memory of `zoo.moe.MoE` vs reference MoE layers, in four regimes.

Each regime (idle / contended cores x OpenMP wait policy unset / passive, see ``zoo.bench.contention``) runs in
its own child process; inside it every row is measured side by side, fp32 CPU, in interleaved repetitions (the
median is reported). Rows: (a) a dense FFN with hidden k*h (the floor), ours, ours with the previous default
(the Python segment loop), (c) the GShard one-hot einsum with capacity 1.25 and groups of 1024, and two dispatch
variants (``torch._grouped_mm``, one padded ``bmm``); ``--rows`` adds (b) the boolean-mask expert loop, (d) the
naive per-expert weight slice and an autograd loop over ``unbind``. Each regime also measures the machine's
GEMM rate and triad bandwidth, and the page reports ours against the roofline limit of ``zoo.bench.roofline``.

Peak memory: the process's peak resident set (Linux ``VmHWM``, reset through ``/proc/self/clear_refs``
before each measured step) minus the resident set just before the step, i.e. what one forward+backward
adds on top of the parameters (activations, gradients, temporaries), with glibc's mmap threshold fixed at
256 KiB so freed tensors leave the RSS at once. ``tracemalloc`` cannot see torch's CPU allocator, hence RSS.
That setting is process-wide and would make every large tensor of a timed step fresh memory, whose first touches
users' processes (glibc's growing dynamic threshold) mostly do not pay: so the timed steps run under glibc's
defaults, and the memory steps in one more child process with the threshold fixed from its start.

    python -m zoo.bench.moe [--quick] [--out PATH.json] [--experts 8,64,256] [--reps 5] [--regimes a,b]

The result is a benchmark record (``zoo.bench.provenance``: commit, source hash, machine, command), by default in
``leaderboard/results/moe_layer/``; the page (``leaderboard/moe_layer.md``) judges its targets only on a file
that carries that provenance.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import nullcontext
from pathlib import Path

import torch
from torch import nn

from zoo.bench import roofline
from zoo.bench.claims import claims_table, has_provenance, provenance_line
from zoo.bench.contention import LABELS, REGIMES, companion, env_for
from zoo.bench.moe_baselines import (
    DenseFloor,
    GroupedMM,
    GShardEinsum,
    LoopMask,
    NaiveSlice,
    OutputOnly,
    PaddedBMM,
    UnbindLoop,
)
from zoo.bench.moe_targets import check_targets, not_judged, summary
from zoo.bench.provenance import BenchRun, output_path
from zoo.moe import MoE, segment_kernel

ROWS = {
    "floor": "(a) dense FFN, hidden k*h (floor)",
    "ours": "ours: zoo.moe.MoE (segment kernel, one parallel region per matmul)",
    "ours_loop": "ours with the previous default (Python loop, one GEMM call per expert)",
    "gshard": "(c) GShard one-hot einsum, cf 1.25, groups of 1024",
    "grouped_mm": "variant: torch._grouped_mm segments",
    "padded_bmm": "variant: one padded bmm over all experts",
    "loop_mask": "(b) loop over experts, boolean-mask tokens",
    "naive_slice": "(d) loop slicing stacked weight per expert",
    "unbind": "variant: autograd loop over weight.unbind(0)",
}
DEFAULT_ROWS = "floor,ours,ours_loop,gshard,grouped_mm,padded_bmm"
MEMORY = "memory"  # --in-regime of the child process that measures peak memory
MODULE = "zoo.bench.moe"  # with zoo.moe, the baselines, the roofline and the contention regimes (its closure)
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
    follows live tensors instead of glibc's growing dynamic threshold keeping them resident. Called once, at the
    start of the memory process, before anything is allocated."""
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


class _LoopDefault(OutputOnly):
    """Ours with ``zoo.moe.segment_kernel.forced_off()`` around forward and backward (see ``step``)."""

    kernel_off = True


def _dispatch(model: nn.Module):
    """The Python segment loop for the previous-default row, the default dispatch for every other row."""
    return segment_kernel.forced_off() if getattr(model, "kernel_off", False) else nullcontext()


def build(E: int, dim: int, hidden: int, top_k: int, rows: list[str]) -> dict[str, nn.Module]:
    torch.manual_seed(0)
    moe = MoE(dim, hidden, E, top_k=top_k, router="topk", experts="ffn")
    ours = OutputOnly(moe)
    ex, gate = moe.experts, moe.router.gate
    shared = (gate, ex.w1, ex.b1, ex.w2, ex.b2, top_k)
    makers = {
        "floor": lambda: DenseFloor(dim, top_k * hidden),
        "ours": lambda: ours,
        "ours_loop": lambda: _LoopDefault(moe),
        "loop_mask": lambda: LoopMask(*shared),
        "gshard": lambda: GShardEinsum(*shared),
        "naive_slice": lambda: NaiveSlice(*shared),
        "grouped_mm": lambda: GroupedMM(*shared),
        "unbind": lambda: UnbindLoop(*shared),
        "padded_bmm": lambda: PaddedBMM(*shared),
    }
    return {r: makers[r]() for r in rows}


def _minor_faults() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def step(model: nn.Module, x: torch.Tensor, g: torch.Tensor) -> tuple[float, float, int | None, int]:
    """One forward+backward; returns (wall seconds, process CPU seconds, extra peak RSS bytes or None, minor page
    faults: first touches of fresh memory)."""
    for p in model.parameters():
        p.grad = None
    x.grad = None
    before = _rss_kb("VmRSS")
    can_peak = _reset_peak()
    t0, c0, f0 = time.perf_counter(), time.process_time(), _minor_faults()
    with _dispatch(model):
        model(x).backward(g)
    dt_s, cpu_s, faults = time.perf_counter() - t0, time.process_time() - c0, _minor_faults() - f0
    peak = _rss_kb("VmHWM") if can_peak else None
    for p in model.parameters():
        p.grad = None
    return dt_s, cpu_s, (None if peak is None or before is None else max(0, peak - before) * 1024), faults


def _rows_for(E: int, args, rows: list[str]) -> list[str]:
    if E > args.naive_max_experts:  # its O(E^2) backward takes minutes per step: not run
        return [r for r in rows if r != "naive_slice"]
    return rows


def _inputs(args) -> tuple[torch.Tensor, torch.Tensor]:
    torch.manual_seed(1)
    return torch.randn(args.tokens, args.dim, requires_grad=True), torch.randn(args.tokens, args.dim)


def bench_one(E: int, args, rows: list[str]) -> dict:
    """Every row's timed steps at one E, under the process's own allocator (glibc's defaults: what users have):
    wall and CPU time, minor page faults, and each row's output against ours."""
    models = build(E, args.dim, args.hidden, args.top_k, _rows_for(E, args, rows))
    x, g = _inputs(args)
    with torch.no_grad():
        ref = models["ours"](x) if "ours" in models else None
    diffs = {}
    for name, m in models.items():
        if ref is not None and name not in ("floor", "gshard", "ours"):
            with torch.no_grad(), _dispatch(m):
                diffs[name] = float((m(x) - ref).abs().max())
        step(m, x, g)  # warm-up
    times: dict[str, list[float]] = {r: [] for r in models}
    cpus: dict[str, list[float]] = {r: [] for r in models}
    faults: dict[str, list[int]] = {r: [] for r in models}
    order = list(models)
    for rep in range(args.reps):
        for name in order[rep % len(order) :] + order[: rep % len(order)]:  # rotate: fair under load drift
            t, c, _, f = step(models[name], x, g)
            times[name].append(t)
            cpus[name].append(c)
            faults[name].append(f)
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
            "minor_faults": int(statistics.median(faults[name])),
            "max_abs_diff_vs_ours": diffs.get(name),
        }
    del models
    return out


def memory_one(E: int, args, rows: list[str]) -> dict:
    """Every row's peak memory at one E, in the memory process (no timed steps run there) with glibc's mmap
    threshold fixed (``_fixed_mmap_threshold``): one warm-up step, then one step with the kernel's gradient cache
    emptied first (a step's own working set); for ours one more step with the cache it filled kept (its steady peak
    counts it)."""
    models = build(E, args.dim, args.hidden, args.top_k, _rows_for(E, args, rows))
    x, g = _inputs(args)
    out = {}
    for name, m in models.items():
        step(m, x, g)
        segment_kernel.empty_cache()
        _, _, mem, _ = step(m, x, g)
        out[name] = {"peak_extra_mib": None if mem is None else round(mem / 2**20, 1)}
        if name == "ours":
            held = segment_kernel.pool_stats()["cached"]
            _, _, steady, _ = step(m, x, g)
            out[name]["cache_held_mib"] = round(held / 2**20, 1)
            out[name]["steady_peak_mib"] = None if steady is None else round((steady + held) / 2**20, 1)
    segment_kernel.empty_cache()
    del models
    return out


NOTES = """\
- **Rows.** (a) is the floor: a dense FFN with hidden k·h has exactly the active FLOPs of a top-k MoE and no
  routing. *ours* = `zoo.moe.MoE(router="topk", experts="ffn")` including its router and the aux losses every
  router attaches. The other rows share the same gate and stacked weights as *ours*; their outputs are checked
  against ours (`max_abs_diff_vs_ours` in the JSON; (c) differs by design: it drops tokens).
- **Why one parallel region per matmul.** The previous default issued one multi-threaded GEMM per expert, i.e.
  one OpenMP parallel region per expert and matmul (6E per step). With spinning OpenMP threads (the policy users
  have) and another process on the cores, every region waits for its partner thread to be scheduled. The segment
  kernel (`zoo.moe.segment_kernel`) splits the sorted rows into one equal range per torch thread and runs each
  piece as a single-threaded GEMM inside one region. The padded `bmm` also has one region, but pays for the
  padding; `torch._grouped_mm` on CPU still issues one GEMM per group.
- **Roofline.** `zoo.bench.roofline`: FLOPs at the GEMM rate measured in the same regime, compulsory bytes
  (weights read twice, gradients written once, activations about six passes) at the measured triad bandwidth;
  the limit is the slower of the two. At E=256 the expert weights are 1 GiB and their gradients another 1 GiB.
- **Gradient cache.** The kernel path takes the experts' weight gradients from a small cache of mappings
  (`zoo.moe.segment_kernel`, off with `ZOO_MOE_POOL=off`) instead of fresh memory. Fresh memory is first touched
  page by page inside the GEMMs; on this machine that costs about as much as the expert GEMMs at E=256, where the
  weight gradient alone is 1 GiB per step. Activations are not cached: they die inside the step, and holding their
  blocks while the gradients are mapped raised the peak. The other rows allocate as PyTorch does; they could gain
  from a caching allocator too, the floor much less (its gradients are 8 MiB).
- **Not measured:** `torch.compile` of the expert path (the segment lengths change every step, so it recompiles
  or runs a dynamic-shape graph that still loops over experts).
"""


def _load(avg) -> str:
    return "n/a" if not avg else f"{avg[0]:.1f}"


def _cell(r: dict | None) -> tuple[str, str]:
    if r is None or not r["ms_all"]:
        return "—", "—"
    mem = "—" if r["peak_extra_mib"] is None else f"{r['peak_extra_mib']:.0f}"
    return f"{r['ms']:.0f} ({r['ratio_to_floor']:.2f}×)", mem


def _mibs(values) -> str:
    return " / ".join("—" if v is None else f"{v:.0f}" for v in values)


def render_regime(name: str, regime: dict, es: list[int]) -> list[str]:
    res, m = regime["results"], regime["machine"]
    lines = [
        f"## {LABELS.get(name, name)}",
        "",
        f"{m['threads']} torch threads; load average at start / end {_load(m['load_avg_start'])} / "
        f"{_load(m['load_avg_end'])}; GEMM rate {regime['roofline']['gemm_gflops']:.0f} GFLOP/s, triad bandwidth "
        f"{regime['roofline']['triad_gbps']:.1f} GB/s.",
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
        cells = [_cell(res[str(e)].get(row)) for e in es]
        lines.append(f"| {label} | " + " | ".join(c[0] for c in cells) + " | " + " | ".join(c[1] for c in cells) + " |")
    held = [res[str(e)].get("ours", {}).get("cache_held_mib") for e in es]
    steady = [res[str(e)].get("ours", {}).get("steady_peak_mib") for e in es]
    if any(h is not None for h in held):
        e_list = " / ".join(map(str, es))
        lines += [
            "",
            f"*ours* keeps {_mibs(held)} MiB of weight-gradient blocks cached between steps; counting them, its "
            f"peak in a step that reuses them was {_mibs(steady)} MiB (E = {e_list}).",
        ]
    return lines + [""]


def render_faults(result: dict) -> list[str]:
    """Minor page faults per timed step (median): each is a first touch of fresh memory, paid in kernel time."""
    es = result["config"]["experts"]
    lines = [
        "## First touches of fresh memory",
        "",
        "Minor page faults per timed step (median; one per 4 KiB page touched for the first time), "
        "`getrusage` of the process.",
        "",
        "| regime | implementation | " + " | ".join(f"E={e}" for e in es) + " |",
        "|---|---|" + "---:|" * len(es),
    ]
    for name, regime in result["regimes"].items():
        for row in ("floor", "ours", "ours_loop"):
            cells = [regime["results"][str(e)].get(row, {}).get("minor_faults") for e in es]
            if all(c is None for c in cells):
                continue
            lines.append(f"| {name} | {row} | " + " | ".join("—" if c is None else f"{c:,}" for c in cells) + " |")
    return lines + [""]


def render_roofline(result: dict) -> list[str]:
    lines = [
        "## Against the physical limit",
        "",
        "Ours against the roofline limit measured in the same regime (`zoo.bench.roofline`).",
        "",
        "Expert-GEMM limit: E x the single-thread time of one expert's six GEMMs at its shape (rows = slots / E) / "
        "threads, i.e. perfectly parallel per-expert GEMMs and nothing else (— where this run did not measure it).",
        "",
        "| regime | E | GFLOP | compulsory GB | compute ms | memory ms | limit ms | ours ms | ours / limit | "
        "expert-GEMM limit ms | ours / expert-GEMM limit |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, regime in result["regimes"].items():
        for e in result["config"]["experts"]:
            lim, r = regime["roofline"]["limits"].get(str(e)), regime["results"][str(e)].get("ours")
            if lim is None or r is None:
                continue
            lines.append(
                f"| {name} | {e} | {lim['flops'] / 1e9:.0f} | {lim['bytes'] / 1e9:.2f} | {lim['compute_ms']:.0f} | "
                f"{lim['memory_ms']:.0f} | {lim['limit_ms']:.0f} | {r['ms']:.0f} | {r['ms'] / lim['limit_ms']:.2f} | "
                + (
                    f"{lim['expert_gemms_limit_ms']:.0f} | {r['ms'] / lim['expert_gemms_limit_ms']:.2f} |"
                    if "expert_gemms_limit_ms" in lim
                    else "— | — |"
                )
            )
    return lines + [""]


def _machine_line(result: dict) -> str:
    """The machine and the date; a record's versions, or an older file's own torch / Python fields."""
    m, versions = result["machine"], result.get("versions", {})
    torch_version, python = m.get("torch", versions.get("torch", "?")), m.get("python", versions.get("python", "?"))
    return f"Machine: {m['cpu']}, {m['cores']} cores, torch {torch_version}, Python {python}; {result['date']}."


NO_PROVENANCE = (
    "**No benchmark record.** This file has no commit or source hash: it was written before benchmark records "
    "carried them (`zoo.bench.provenance`), so its numbers are shown and its targets are not judged. A new "
    "`zoo bench moe` run writes a record with both."
)


def provenance_lines(result: dict, path: Path | None) -> list[str]:
    """Which record the page shows and what made it, or that the file has no provenance."""
    if not has_provenance(result):
        return [NO_PROVENANCE, ""]
    return [provenance_line(path, result) if path else f"Commit {result['commit'][:12]}.", ""]


def targets_lines(result: dict) -> list[str]:
    """The targets (``zoo.bench.moe_targets``), judged only on a file with provenance (a record); an older file's
    numbers, not judged."""
    verdicts = check_targets(result)
    return claims_table(verdicts if has_provenance(result) else not_judged(verdicts))


def render_markdown(result: dict, path: Path | None = None) -> str:
    """The page of one ``zoo bench moe`` result (``path``: its file, named on the page)."""
    c = result["config"]
    es = c["experts"]
    lines = [
        "# MoE layer benchmark (`zoo bench moe`)",
        "",
        f"Forward+backward, fp32 CPU, {c['tokens']} tokens, dim {c['dim']}, hidden {c['hidden']}, top-{c['top_k']}. "
        f"Four regimes, each in its own process; inside a regime all rows are measured side by side, median of "
        f"{c['reps']} interleaved repetitions per cell. Contended = a companion process running a 2-thread loop of "
        "1024² GEMMs on the same cores (`zoo.bench.contention`).",
        "",
        _machine_line(result),
        "",
        *provenance_lines(result, path),
        "How the dispatch was chosen, and what is still open: [notes/moe_layer.md](notes/moe_layer.md).",
        "",
        "Peak memory = peak RSS during one step (Linux VmHWM, reset via /proc/self/clear_refs) minus RSS before it "
        "(glibc mmap threshold fixed at 256 KiB so freed tensors leave RSS): activations + gradients + temporaries, "
        "not the parameters. It is measured once, in a process of its own (idle, no companion; the threshold is "
        "process-wide, and the timed steps run under glibc's default allocator, what users have), so every "
        "regime's table shows the same peaks: one step per row after a warm-up, with the segment kernel's gradient "
        "cache emptied first; between steps *ours* keeps that cache (its size, and the peak of one more step "
        "counting it, are given under each table).",
        "",
    ]
    for name, regime in result["regimes"].items():
        lines += render_regime(name, regime, es)
    lines += render_roofline(result)
    lines += render_faults(result)
    lines += ["## Targets", "", *targets_lines(result)]
    lines += ["", "## Notes", "", NOTES.rstrip(), "", f"Command: `{result['command']}`", ""]
    return "\n".join(lines)


def _config(args, experts: list[int]) -> dict:
    return {
        "tokens": args.tokens,
        "dim": args.dim,
        "hidden": args.hidden,
        "top_k": args.top_k,
        "experts": experts,
        "reps": args.reps,
        "quick": args.quick,
        "dtype": "float32",
    }


def run_regime(args, experts: list[int], rows: list[str]) -> dict:
    """Inside one regime's child process: every E, every row, plus this regime's roofline inputs; the timed steps
    run under glibc's default allocator (the memory steps run in a process of their own, ``run_memory``)."""
    torch.set_num_threads(args.threads)
    machine = {
        "threads": torch.get_num_threads(),
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", "unset"),
        "load_avg_start": os.getloadavg() if hasattr(os, "getloadavg") else None,
    }
    segment_kernel.kernel()  # build or load it before anything is timed
    small = args.quick
    rate = roofline.gemm_rate(256 if small else 2048, reps=1 if small else 3)
    bandwidth = roofline.triad_bandwidth(8 if small else 128, reps=1 if small else 5)
    results, limits = {}, {}
    for E in experts:
        print(f"  E={E} ...", flush=True)
        results[str(E)] = bench_one(E, args, rows)
        cost = roofline.step_cost(args.tokens, args.dim, args.hidden, args.top_k, E)
        one = roofline.expert_gemm_seconds(args.tokens * args.top_k // E, args.dim, args.hidden, 1 if small else 3)
        limits[str(E)] = {
            **cost,
            **roofline.limit(cost, rate, bandwidth),
            "expert_gemms_limit_ms": 1e3 * one * E / torch.get_num_threads(),
        }
    machine["load_avg_end"] = os.getloadavg() if hasattr(os, "getloadavg") else None
    return {
        "machine": machine,
        "roofline": {"gemm_gflops": rate / 1e9, "triad_gbps": bandwidth / 1e9, "limits": limits},
        "results": results,
    }


def run_memory(args, experts: list[int], rows: list[str]) -> dict:
    """Inside the memory child process: glibc's mmap threshold fixed from its start, every E's peaks
    (``memory_one``); ``{"method", "results": {E: {row: numbers}}}``."""
    torch.set_num_threads(args.threads)
    fixed_mmap = _fixed_mmap_threshold()
    segment_kernel.kernel()
    results = {}
    for E in experts:
        print(f"  E={E} memory ...", flush=True)
        results[str(E)] = memory_one(E, args, rows)
    method = "peak RSS (VmHWM after /proc/self/clear_refs reset) minus RSS before the step, in its own process"
    return {"method": method + ("; glibc mmap threshold fixed at 256 KiB" if fixed_mmap else ""), "results": results}


def _child(raw: list[str], name: str, policy: str | None, tmp: Path) -> dict | None:
    """Run one child process (a regime's timed steps, or the memory steps) and read what it wrote; None, after one
    line on stderr, when it failed."""
    part = tmp / f"{name}.json"
    cmd = [sys.executable, "-m", "zoo.bench.moe", *raw, "--in-regime", name, "--out", str(part)]
    code = subprocess.call(cmd, env=env_for(policy), cwd=str(REPO))
    if code != 0 or not part.is_file():
        print(f"zoo bench moe: the {name} process failed (exit {code})", file=sys.stderr)
        return None
    return json.loads(part.read_text())


def _merge_memory(result: dict, memory: dict) -> None:
    """The memory process's peaks into every regime's cells (one measurement, shown in each regime's table)."""
    for regime in result["regimes"].values():
        regime["memory_method"] = memory["method"]
        for e, rows in memory["results"].items():
            for name, numbers in rows.items():
                if name in regime["results"].get(e, {}):
                    regime["results"][e][name].update(numbers)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="zoo bench moe", description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="tiny sizes, 2 reps: a smoke run, not a measurement")
    p.add_argument("--out", type=Path, default=None, help="results JSON (default leaderboard/results/...)")
    p.add_argument("--markdown", type=Path, default=None, help="table (default leaderboard/moe_layer.md)")
    p.add_argument("--experts", type=str, default=None, help="comma-separated E values")
    p.add_argument("--reps", type=int, default=None)
    p.add_argument("--tokens", type=int, default=None)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--regimes", type=str, default=",".join(REGIMES), help=f"any of {', '.join(REGIMES)}")
    p.add_argument("--companion-threads", type=int, default=2, help="threads of the contended regimes' GEMM loop")
    p.add_argument(
        "--naive-max-experts",
        type=int,
        default=64,
        help="skip (d) above this E: its O(E^2) backward takes minutes per step",
    )
    p.add_argument("--rows", type=str, default=DEFAULT_ROWS, help=f"any of {', '.join(ROWS)}")
    p.add_argument("--render", type=Path, default=None, help="only re-render the table from this JSON")
    p.add_argument("--in-regime", type=str, default=None, help=argparse.SUPPRESS)  # the child process
    args = p.parse_args(argv)
    if args.render:
        result = json.loads(args.render.read_text())
        result["targets"] = [summary(v) for v in check_targets(result)]
        page = render_markdown(result, args.render.resolve())
        (args.markdown or REPO / "leaderboard" / "moe_layer.md").write_text(page)
        return 0
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
    unknown = [r for r in rows if r not in ROWS]
    if unknown:
        p.error(f"unknown rows {', '.join(unknown)}; valid: {', '.join(ROWS)}")
    if not hasattr(torch, "_grouped_mm") and "grouped_mm" in rows:
        rows.remove("grouped_mm")
    if args.in_regime:
        measured = run_memory(args, experts, rows) if args.in_regime == MEMORY else run_regime(args, experts, rows)
        args.out.write_text(json.dumps(measured) + "\n")
        return 0
    regimes = [r for r in args.regimes.split(",") if r]
    bad = [r for r in regimes if r not in REGIMES]
    if bad:
        p.error(f"unknown regimes {', '.join(bad)}; valid: {', '.join(REGIMES)}")
    raw = list(argv if argv is not None else sys.argv[1:])
    bench = BenchRun("moe", [MODULE], raw)
    result = {"config": _config(args, experts), "regimes": {}}
    segment_kernel.kernel()  # one build, before the children (they load it from the cache)
    with tempfile.TemporaryDirectory() as tmp:
        for name in regimes:
            contended, policy = REGIMES[name]
            print(f"regime {name} ...", flush=True)
            with companion(args.companion_threads) if contended else nullcontext():
                measured = _child(raw, name, policy, Path(tmp))
            if measured is None:
                return 1
            result["regimes"][name] = measured
        print("memory ...", flush=True)
        memory = _child(raw, MEMORY, None, Path(tmp))
        if memory is None:
            return 1
        _merge_memory(result, memory)
    result["targets"] = [summary(v) for v in check_targets(result)]
    out = output_path("moe", args.out, leaderboard=True)  # a full run's default: the page's folder
    result = bench.write(result, out, threads=args.threads, regime=",".join(regimes))
    md_path = args.markdown or (
        out.with_suffix(".md") if args.quick or args.out else REPO / "leaderboard" / "moe_layer.md"
    )
    md_path.write_text(render_markdown(result, out.resolve()))
    print(md_path.read_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
