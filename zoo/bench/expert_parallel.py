"""`zoo bench ep`: one `zoo.moe.MoE` layer trained by one process with 2 threads against the same layer spread over
two processes with 1 thread each (`zoo.moe.ExpertParallelMoE`, gloo), side by side in one run (issue 61).

For each E (default 8, 64, 256), ``--tokens`` tokens a step in all: one process runs the whole batch, or each of the
two processes runs half of it with half the experts. A step is forward + backward + ``reduce_gradients`` (no
optimiser: it is the same in both). The two setups alternate, ``--repeats`` times each; medians are reported. In the
two-process setup every ``all_to_all_single`` is timed and its off-rank bytes counted (the input rows a rank sends
to the other rank), so the record holds the share of the step spent exchanging tokens and the measured link rate.

From those the page states a model of the step time at N processes (same tokens per process, E/N experts each):
``t(N) = t_compute + 4 * (N - 1) / N * 2 k T d b / rate`` a layer (2 exchanges forward, 2 backward, each moving
``k T d b`` bytes of a rank's routed rows, of which ``(N-1)/N`` leave the rank), with its assumptions.

    zoo bench ep [--experts 8 64 256] [--tokens 4096] [--dim 256] [--hidden 512] [--top-k 2] [--repeats 5]
                 [--out FILE | --leaderboard]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from zoo.bench.provenance import BenchRun, add_output_arguments, output_path, record_folder

NAME = "ep"


def _layer(E: int, args) -> torch.nn.Module:
    from zoo.moe import MoE

    torch.manual_seed(0)
    return MoE(dim=args.dim, hidden=args.hidden, num_experts=E, top_k=args.top_k)


def _step(layer, x) -> None:
    y, routing = layer(x)
    (y.square().mean() + layer.aux_loss(routing)).backward()


def one_process(E: int, args) -> list[float]:
    """Step times (s) of the whole batch in this process with 2 threads."""
    torch.set_num_threads(2)
    layer = _layer(E, args)
    x = torch.randn(args.tokens, args.dim, generator=torch.Generator().manual_seed(1))
    _step(layer, x)  # warm-up
    times = []
    for _ in range(args.steps):
        start = time.perf_counter()
        _step(layer, x)
        times.append(time.perf_counter() - start)
    return times


class _TimedExchange:
    """Wraps ``dist.all_to_all_single``: wall time inside it and the bytes a rank sends to other ranks."""

    def __init__(self):
        self.seconds, self.bytes, self.original = 0.0, 0, dist.all_to_all_single

    def __call__(self, output, input, output_split_sizes=None, input_split_sizes=None, group=None, **kw):
        rank = dist.get_rank(group)
        row = input[0].numel() * input.element_size() if input.shape[0] else 0
        sent = sum(n for q, n in enumerate(input_split_sizes or []) if q != rank)
        self.bytes += sent * row
        start = time.perf_counter()
        out = self.original(output, input, output_split_sizes, input_split_sizes, group=group, **kw)
        self.seconds += time.perf_counter() - start
        return out


def _worker(rank: int, E: int, args, init: str, out: str) -> None:
    from zoo.moe import build_parallel_groups, reduce_gradients, to_expert_parallel

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{init}", rank=rank, world_size=2)
    groups = build_parallel_groups(2)
    layer = to_expert_parallel(_layer(E, args), groups.ep_group)
    x = torch.randn(args.tokens, args.dim, generator=torch.Generator().manual_seed(1))
    x = x.chunk(2)[rank].contiguous()
    timer = _TimedExchange()
    dist.all_to_all_single = timer
    try:
        _step(layer, x)
        reduce_gradients(layer, groups)
        times, exchange, sent = [], [], []
        for _ in range(args.steps):
            timer.seconds, timer.bytes = 0.0, 0
            dist.barrier()
            start = time.perf_counter()
            _step(layer, x)
            reduce_gradients(layer, groups)
            times.append(time.perf_counter() - start)
            exchange.append(timer.seconds)
            sent.append(timer.bytes)
    finally:
        dist.all_to_all_single = timer.original
    Path(out, f"rank{rank}.json").write_text(json.dumps({"times": times, "exchange": exchange, "bytes": sent}))
    dist.destroy_process_group()


def two_processes(E: int, args) -> dict:
    """Per step: the slower rank's time, its all-to-all time and the bytes both ranks sent off-rank."""
    with tempfile.TemporaryDirectory() as tmp:
        mp.spawn(_worker, args=(E, args, f"{tmp}/init", tmp), nprocs=2, join=True)
        ranks = [json.loads(Path(tmp, f"rank{r}.json").read_text()) for r in range(2)]
    steps = range(len(ranks[0]["times"]))
    slow = [max(range(2), key=lambda r, i=i: ranks[r]["times"][i]) for i in steps]
    return {
        "times": [ranks[r]["times"][i] for i, r in zip(steps, slow)],
        "exchange": [ranks[r]["exchange"][i] for i, r in zip(steps, slow)],
        "bytes": [ranks[0]["bytes"][i] + ranks[1]["bytes"][i] for i in steps],
    }


def measure(E: int, args) -> dict:
    """Alternate the two setups ``repeats`` times; medians over every measured step."""
    one, two = [], {"times": [], "exchange": [], "bytes": []}
    for _ in range(args.repeats):
        one += one_process(E, args)
        for key, values in two_processes(E, args).items():
            two[key] += values
    t1, t2 = statistics.median(one), statistics.median(two["times"])
    exchange = statistics.median(two["exchange"])
    sent = statistics.median(two["bytes"])
    return {
        "experts": E,
        "one_process_2_threads_s": t1,
        "two_processes_1_thread_s": t2,
        "tokens_per_s_one": args.tokens / t1,
        "tokens_per_s_two": args.tokens / t2,
        "all_to_all_s": exchange,
        "all_to_all_share": exchange / t2,
        "bytes_off_rank_per_step": sent,
        "link_bytes_per_s": sent / 2 / exchange if exchange else None,
    }


def render(record: dict) -> str:
    """The page: the measured rows, then the scaling model with the measured link rate."""
    a, machine = record["args"], record["machine"]
    lines = [
        "# Expert parallelism: one process vs two (`zoo bench ep`)",
        "",
        f"One `zoo.moe.MoE` layer (d {a['dim']}, hidden {a['hidden']}, top-{a['top_k']}, {a['tokens']} tokens a step "
        "in all), forward + backward + gradient reduction, median of the interleaved steps. Machine: "
        f"{machine.get('cpu')} {machine.get('cpu_id', '')}, load average {machine.get('load_avg_start')} at the start."
        f" Record: `{record['command']}` at {record['commit'][:10]}.",
        "",
        "| E | 1 process × 2 threads (ms) | 2 processes × 1 thread (ms) | tokens/s 1 × 2 | tokens/s 2 × 1 "
        "| all-to-all share | bytes off-rank / step | link rate (MB/s) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in record["rows"]:
        rate = f"{r['link_bytes_per_s'] / 1e6:.0f}" if r["link_bytes_per_s"] else "n/a"
        lines.append(
            f"| {r['experts']} | {r['one_process_2_threads_s'] * 1e3:.1f} | {r['two_processes_1_thread_s'] * 1e3:.1f} "
            f"| {r['tokens_per_s_one']:.0f} | {r['tokens_per_s_two']:.0f} | {r['all_to_all_share']:.0%} "
            f"| {r['bytes_off_rank_per_step'] / 1e6:.2f} MB | {rate} |"
        )
    lines += [
        "",
        "## A model of the step time at N processes",
        "",
        "Same tokens T per process, E/N experts each: `t(N) = t_compute(T, E/N) + 4 · (N-1)/N · k·T·d·b / rate` per "
        "layer (two exchanges forward, two backward; each moves a rank's k·T routed rows of d values of b bytes, of "
        "which (N-1)/N leave it). Assumptions: balanced routing (every rank sends and receives k·T rows), a link rate "
        "that does not fall with N (true inside one NVLink/NVSwitch node, not across nodes, where the all-to-all "
        "becomes the bound), expert compute that scales with the rows an expert receives, and the gradient reduction "
        "of the replicated parameters overlapping nothing. Here gloo over loopback is the link; on NCCL the rate is "
        "one to two orders of magnitude higher and the share of the exchange smaller. DeepSpeed-MoE (Rajbhandari et "
        "al. 2022) and Tutel (Hwang et al. 2023) report their scaling on GPU clusters with NCCL (Tutel: an adaptive "
        "all-to-all and 2D-hierarchical exchange across nodes); those numbers are not comparable with CPU processes "
        "on one machine and are not repeated here.",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="zoo bench ep", description=__doc__.split("\n\n")[0])
    parser.add_argument("--experts", type=int, nargs="+", default=[8, 64, 256])
    parser.add_argument("--tokens", type=int, default=4096)
    parser.add_argument("--dim", type=int, default=256)
    parser.add_argument("--hidden", type=int, default=512)
    parser.add_argument("--top-k", type=int, default=2)
    parser.add_argument("--steps", type=int, default=3, help="measured steps per repeat")
    parser.add_argument("--repeats", type=int, default=3)
    add_output_arguments(parser)
    args = parser.parse_args(argv)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    run = BenchRun(NAME, ["zoo.bench.expert_parallel", "zoo.moe"], argv)
    rows = []
    for E in args.experts:
        rows.append(measure(E, args))
        print(json.dumps(rows[-1]), flush=True)
    path = output_path(NAME, args.out, args.leaderboard)
    record = run.write({"args": vars(args) | {"out": None}, "rows": rows}, path, threads=2)
    if args.leaderboard:
        folder = record_folder(NAME)
        page = folder.parents[1] / f"{folder.name}.md"
        page.write_text(render(record))
        print(f"wrote {page}")
    else:
        print(render(record))
    return 0
