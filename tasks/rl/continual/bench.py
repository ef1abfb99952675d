"""Environment steps per second, PPO updates included, for MoE PPO (with and without SPHERE) and dense PPO side by
side.

    zoo bench sphere [--task faucet-close] [--iterations 2] [--num-envs 8] [--n-steps 256] [--repeats 1]
                     [--methods dense moe sphere] [--dispatch sparse] [--leaderboard | --out FILE]
    zoo bench sphere --env-only [--env-steps 1000]     # raw MetaWorld speed of each CW10 task, random actions

Each method runs a real ``ContinualPPO`` fit on one MetaWorld task in this process; the clocks cover the PPO
iterations only (rollout + update; the stage-end evaluation and r_e(K) are left out), and runs are interleaved
(dense, moe, sphere, dense, ...) so that a shared machine's load hits every method alike. Two throughputs: per
wall second, and per CPU second of this process (``time.process_time``; with one torch thread, what a shared
machine's load does not inflate). The ratios and the speed target use the CPU one. Prints the table and
the ratios to dense, and writes a benchmark record (``zoo.bench.provenance``: commit, source hash, machine,
command, every run): by default ``runs/bench/sphere/<timestamp>.json``; with ``--leaderboard`` the same name in
``leaderboard/results/sphere/bench/`` (what the page's speed table reads); with ``--out`` that file.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings

from zoo.bench.provenance import BenchRun, add_output_arguments, output_path

MODULE = "zoo_tasks.rl.continual.bench"  # with ContinualPPO and the MetaWorld data module (its closure)
METHODS = {"dense": ("dense", "none"), "moe": ("moe", "none"), "sphere": ("moe", "sphere")}


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="zoo bench sphere", description=__doc__.split("\n\n")[0])
    p.add_argument("--task", default="faucet-close")
    p.add_argument("--iterations", type=int, default=2, help="PPO iterations per run")
    p.add_argument("--num-envs", type=int, default=8)
    p.add_argument("--n-steps", type=int, default=256)
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--n-epochs", type=int, default=10)
    p.add_argument("--width", type=int, default=256)
    p.add_argument("--num-experts", type=int, default=10)
    p.add_argument("--top-k", type=int, default=2)
    p.add_argument("--router", default="topk")
    p.add_argument("--dispatch", default="sparse", choices=("sparse", "dense"))
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    p.add_argument("--methods", nargs="+", default=list(METHODS), choices=list(METHODS))
    p.add_argument("--env-only", action="store_true", help="only time each CW10 task's env with random actions")
    p.add_argument("--env-steps", type=int, default=1000, help="steps per task with --env-only")
    add_output_arguments(p)
    return p


def measure(method: str, args: argparse.Namespace, seed: int) -> dict:
    """One fit of ``method``; its PPO-iteration throughput."""
    import pytorch_lightning as pl

    from zoo_tasks.rl.continual.data import MetaWorldSequenceDataModule
    from zoo_tasks.rl.continual.ppo import ContinualPPO

    actor, penalty = METHODS[method]
    pl.seed_everything(seed, verbose=False)
    model = ContinualPPO(
        actor=actor,
        penalty=penalty,
        width=args.width,
        num_experts=args.num_experts,
        top_k=args.top_k,
        router=args.router,
        dispatch=args.dispatch,
        n_epochs=args.n_epochs,
        batch_size=args.batch_size,
        ntk_probe=4,
        checkpoint_every_s=0,
    )
    data = MetaWorldSequenceDataModule(
        tasks=[args.task],
        steps_per_task=args.iterations * args.num_envs * args.n_steps,
        num_envs=args.num_envs,
        n_steps=args.n_steps,
        eval_episodes=1,
        eval_envs=1,
    )
    trainer = pl.Trainer(
        max_epochs=1,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        accelerator="cpu",
    )
    trainer.fit(model, data)
    t = model._timing
    seconds, cpu = t["rollout_s"] + t["update_s"], t["rollout_cpu_s"] + t["update_cpu_s"]
    return {
        "env_steps": data.steps_per_task,
        "rollout_s": t["rollout_s"],
        "update_s": t["update_s"],
        "rollout_cpu_s": t["rollout_cpu_s"],
        "update_cpu_s": t["update_cpu_s"],
        "env_steps_per_wall_s": data.steps_per_task / seconds,
        "env_steps_per_s": data.steps_per_task / cpu,
        "actor_params": sum(p.numel() for p in model.actor.parameters()),
    }


def run(args: argparse.Namespace) -> dict:
    import torch

    torch.set_num_threads(args.threads)
    runs: dict[str, list[dict]] = {m: [] for m in args.methods}
    for repeat in range(args.repeats):
        for method in args.methods:
            runs[method].append(measure(method, args, seed=repeat))
    results = {}
    for method, rs in runs.items():
        results[method] = {
            "env_steps_per_s": statistics.fmean(r["env_steps_per_s"] for r in rs),
            "env_steps_per_wall_s": statistics.fmean(r["env_steps_per_wall_s"] for r in rs),
            "rollout_s": statistics.fmean(r["rollout_cpu_s"] for r in rs),
            "update_s": statistics.fmean(r["update_cpu_s"] for r in rs),
            "actor_params": rs[0]["actor_params"],
            "runs": rs,
        }
    if "dense" in results:
        base = results["dense"]["env_steps_per_s"]
        for r in results.values():
            r["ratio_vs_dense"] = r["env_steps_per_s"] / base
    settings = {k: v for k, v in vars(args).items() if k not in ("out", "leaderboard")}
    return {"settings": settings, "results": results}


def env_speed(steps: int) -> dict[str, float]:
    """Env steps per CPU second of one env of each CW10 task, uniformly random actions (resets included)."""
    import numpy as np

    from zoo_tasks.rl.continual.metaworld_envs import CW10, make_task_env

    speeds = {}
    rng = np.random.default_rng(0)
    for task in CW10:
        env = make_task_env(task, seed=0)
        env.reset()
        start = time.process_time()
        for _ in range(steps):
            _, _, terminated, truncated, _ = env.step(rng.uniform(-1, 1, 4).astype(np.float32))
            if terminated or truncated:
                env.reset()
        speeds[task] = steps / (time.process_time() - start)
        env.close()
    return speeds


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    warnings.filterwarnings("ignore")
    if args.env_only:
        speeds = env_speed(args.env_steps)
        print("| task | env steps per CPU s |\n|---|---|")
        print("\n".join(f"| {t} | {v:.0f} |" for t, v in speeds.items()))
        return 0
    record = BenchRun("sphere", [MODULE], argv)
    bench = run(args)
    print("| method | env steps per CPU s | per wall s | rollout CPU s | update CPU s | vs dense (CPU) |")
    print("|---|---|---|---|---|---|")
    for method, r in bench["results"].items():
        ratio = r.get("ratio_vs_dense")
        print(
            f"| {method} | {r['env_steps_per_s']:.1f} | {r['env_steps_per_wall_s']:.1f} | {r['rollout_s']:.1f} | "
            f"{r['update_s']:.1f} | {'—' if ratio is None else f'{ratio:.2f}x'} |"
        )
    record.write(bench, output_path("sphere", args.out, args.leaderboard, folder="sphere/bench"), threads=args.threads)
    return 0


if __name__ == "__main__":
    sys.exit(main())
