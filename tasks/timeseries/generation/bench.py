"""``zoo bench timemode-speed``: time a training step and a generation batch of TimeMoDE and its dense twin at the
benchmark size (what ``leaderboard/notes/timemode.md`` sizes the grid with); ``--channels 7 --unconditional`` times
the ETTh rows' model (Diffusion-TS's protocol). CPU and wall seconds are both printed: on a shared machine the wall
time grows with the load, the CPU time does not. Writes a benchmark record (``zoo.bench.provenance``: commit,
source hash, machine, command, every row): ``--leaderboard`` into ``leaderboard/results/bench/timemode-speed/``,
``--out FILE``, else ``runs/bench/timemode-speed/``."""

from __future__ import annotations

import argparse
import time

from zoo.bench.provenance import BenchRun, add_output_arguments, output_path

MODULE = "zoo_tasks.timeseries.generation.bench"  # with TimeMoDE (its closure)


def main(argv: list[str] | None = None) -> int:
    import numpy as np
    import torch

    from zoo_tasks.timeseries.generation.module import TimeMoDE

    parser = argparse.ArgumentParser(prog="zoo bench timemode-speed")
    parser.add_argument("--lengths", type=int, nargs="+", default=[24, 96])
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--steps", type=int, default=5, help="timed training steps (after one warm-up)")
    parser.add_argument("--samples", type=int, default=1000, help="windows generated in one batch")
    parser.add_argument("--sample-steps", type=int, default=50)
    parser.add_argument("--channels", type=int, default=1, help="series per window (ETTh: 7)")
    parser.add_argument("--unconditional", action="store_true", help="prompted=False (the ETTh rows)")
    add_output_arguments(parser)
    args = parser.parse_args(argv)
    bench = BenchRun("timemode-speed", [MODULE], argv)
    rows = []
    torch.manual_seed(0)
    print("| L | model | parameters | train step CPU s / wall s | generate CPU s / wall s |")
    print("|---|---|---|---|---|")
    for length in args.lengths:
        for moe in (True, False):
            patch = 4 if length <= 24 else 8
            model = TimeMoDE(
                seq_len=length,
                patch_len=patch,
                moe=moe,
                sample_steps=args.sample_steps,
                channels=args.channels,
                prompted=not args.unconditional,
            )
            x = torch.rand(args.batch, length, args.channels) * 2 - 1
            opt = torch.optim.AdamW(model.parameters(), 1e-3)
            timings = []
            for i in range(args.steps + 1):
                wall, cpu = time.perf_counter(), time.process_time()
                loss, _ = model.loss_and_routing((x, None))
                opt.zero_grad()
                loss.backward()
                opt.step()
                if i:
                    timings.append((time.process_time() - cpu, time.perf_counter() - wall))
            step_cpu, step_wall = np.mean(timings, axis=0)
            prompts = np.random.default_rng(0).uniform(-1, 1, (100, length, args.channels))
            wall, cpu = time.perf_counter(), time.process_time()
            if args.unconditional:
                model.sample_windows(args.samples, "bench")
            else:
                model.generate(prompts, args.samples, "bench")
            gen_cpu, gen_wall = time.process_time() - cpu, time.perf_counter() - wall
            params = sum(p.numel() for p in model.parameters())
            name = "timemode" if moe else "dense"
            step, gen = f"{step_cpu:.3f} / {step_wall:.3f}", f"{gen_cpu:.1f} / {gen_wall:.1f}"
            print(f"| {length} | {name} | {params:,} | {step} | {gen} |")
            rows.append(
                {"length": length, "model": name, "parameters": params, "train_step_cpu_s": float(step_cpu)}
                | {"train_step_wall_s": float(step_wall), "generate_cpu_s": gen_cpu, "generate_wall_s": gen_wall}
            )
    settings = {k: v for k, v in vars(args).items() if k not in ("out", "leaderboard")}
    bench.write({"settings": settings, "rows": rows}, output_path("timemode-speed", args.out, args.leaderboard))
    return 0
