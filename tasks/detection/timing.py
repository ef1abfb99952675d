"""``zoo bench dronedino-step``: time DroneDINO training steps on the real data and show whether the loss falls.

    zoo bench dronedino-step --moe hetero --tasks ir,rgb --size 320 --batch 4 --steps 3
    zoo bench dronedino-step --moe none --tasks ir --size 128 --max-images 16 --steps 40   # a learning check

Prints one line per run: seconds per training step (and per inference batch), parameters, the first and last
losses, and writes them as a benchmark record (``zoo.bench.provenance``): ``--leaderboard`` into
``leaderboard/results/bench/dronedino-step/``, ``--out FILE``, else ``runs/bench/dronedino-step/``.
Single-threaded unless ``--threads`` says otherwise (the notes' numbers: ``--threads 1``).
"""

from __future__ import annotations

import argparse
import time

from zoo.bench.provenance import BenchRun, add_output_arguments, output_path

MODULE = "zoo_tasks.detection.timing"  # with the DroneDINO module and its data (its closure)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="zoo bench dronedino-step", description=__doc__.splitlines()[0])
    parser.add_argument("--moe", default="hetero", help="none | topk | hetero")
    parser.add_argument("--tasks", default="ir,rgb")
    parser.add_argument("--size", type=int, default=320)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--max-images", type=int, default=None)
    parser.add_argument("--threads", type=int, default=1)
    add_output_arguments(parser)
    args = parser.parse_args(argv)
    bench = BenchRun("dronedino-step", [MODULE], argv)

    import torch

    from zoo_tasks.detection.data import DroneDetectionDataModule
    from zoo_tasks.detection.module import DroneDINOModule

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    tasks = args.tasks.split(",")
    dm = DroneDetectionDataModule(
        tasks=tasks, image_size=args.size, batch_size=args.batch, max_images=args.max_images, synthetic_pairs=64
    )
    aux = {"load_balance": 0.01, "task_recognition": 0.1}  # as configs/dronedino/dronedino.yaml
    model = DroneDINOModule(moe=args.moe, two_stream="rgbir" in tasks, aux_weights=aux)
    opt = model.configure_optimizers()
    losses, times, batch = [], [], None
    while len(losses) < args.steps:
        for batch in dm.train_dataloader():
            start = time.perf_counter()
            loss, _ = model.loss_and_routing(batch)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.1)
            opt.step()
            times.append(time.perf_counter() - start)
            losses.append((batch["task"], round(loss.item(), 3)))
            if len(losses) >= args.steps:
                break
    model.eval()
    start = time.perf_counter()
    with torch.no_grad():
        x, samples = model.mmdet_inputs(batch)
        model.detector.predict(x, samples)
    infer = time.perf_counter() - start
    params = sum(p.numel() for p in model.parameters()) / 1e6
    print(
        f"moe={args.moe} tasks={args.tasks} size={args.size} batch={args.batch} threads={args.threads} "
        f"params={params:.1f}M s/step={sum(times) / len(times):.2f} (each {[round(t, 2) for t in times[:5]]}) "
        f"inference s/batch={infer:.2f} first losses={losses[:4]} last losses={losses[-4:]}",
        flush=True,
    )
    numbers = {"params_m": params, "step_s": times, "inference_s": infer, "losses": losses}
    settings = {k: v for k, v in vars(args).items() if k not in ("out", "leaderboard")}
    bench.write({"settings": settings, **numbers}, output_path("dronedino-step", args.out, args.leaderboard))
    return 0
