"""Environment steps per second, training included, for ScaleMoE and its dense SimBa twin side by side.

    zoo bench scalemoe [--env cartpole-swingup] [--env-steps 1000] [--critic-hidden 128] [--router topk] [--repeats 1]
                       [--leaderboard | --out FILE]

Each architecture runs a real ``SACAgent`` fit (act, store, 2 SAC updates per agent step) in this process; the
clock covers only the learning phase (after the random warm-up), and runs are interleaved (dense, MoE, dense, ...)
so that a shared machine's load hits every architecture alike. Prints the table and the MoE / dense ratios, and
writes a benchmark record (``zoo.bench.provenance``: commit, source hash, machine, command, every run): by default
``runs/bench/scalemoe/<timestamp>-critic<width>.json`` (under the working directory); with ``--leaderboard`` the
same name in ``leaderboard/results/scalemoe/bench/``, the records the leaderboard page reads (its speed table and
speed target); with ``--out FILE`` that file.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from pathlib import Path

from zoo.bench.provenance import BenchRun, add_output_arguments, output_path, record_folder

MODULE = "zoo_tasks.rl.bench"  # with the SAC agent, its networks and environments (its closure)
ARCHITECTURES = ("simba", "scalemoe-output", "scalemoe-feature")
LOOP_PREFIX = "loop:"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="zoo bench scalemoe", description=__doc__.split("\n\n")[0])
    p.add_argument("--env", default="cartpole-swingup")
    p.add_argument("--env-steps", type=int, default=1000, help="environment steps per run, warm-up included")
    p.add_argument("--learning-starts", type=int, default=100, help="random agent steps before updates start")
    p.add_argument("--actor-hidden", type=int, default=128)
    p.add_argument("--critic-hidden", type=int, default=128, help="SimBa reference: 512")
    p.add_argument("--num-experts", type=int, default=8)
    p.add_argument("--top-k", type=int, default=2)
    p.add_argument("--router", default="topk", help="the MoE gates' router (a name in zoo.moe.ROUTERS)")
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    p.add_argument("--architectures", nargs="+", default=list(ARCHITECTURES))
    p.add_argument(
        "--compare-loop",
        action="store_true",
        help="also run each MoE architecture with zoo.moe's previous Python segment loop, as 'loop:<architecture>'",
    )
    add_output_arguments(p)
    return p


def output_dir(leaderboard: bool) -> Path:
    """Where a result goes without ``--out``: the leaderboard's benchmark folder only when asked for."""
    return record_folder("scalemoe", folder="scalemoe/bench") if leaderboard else Path("runs") / "bench" / "scalemoe"


def measure(architecture: str, args: argparse.Namespace, seed: int) -> dict:
    """One fit; env steps/s and updates/s over the learning phase only. ``loop:<architecture>`` runs it with
    ``zoo.moe``'s segment kernel off (the Python loop, the default before the kernel)."""
    from contextlib import nullcontext

    import pytorch_lightning as pl

    from zoo.moe import segment_kernel

    loop = architecture.startswith(LOOP_PREFIX)
    architecture = architecture.removeprefix(LOOP_PREFIX)
    from zoo_tasks.rl.data import DMControlDataModule
    from zoo_tasks.rl.sac import SACAgent

    class LearningPhaseClock(pl.Callback):
        def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
            if batch_idx + 1 == args.learning_starts:
                self.start, self.start_updates = time.perf_counter(), module._timing["updates"]

        def on_train_end(self, trainer, module):
            self.seconds = time.perf_counter() - self.start
            self.updates = module._timing["updates"] - self.start_updates

    pl.seed_everything(seed, verbose=False)
    agent = SACAgent(
        architecture=architecture,
        actor_hidden=args.actor_hidden,
        critic_hidden=args.critic_hidden,
        num_experts=args.num_experts,
        top_k=args.top_k,
        router=args.router,
        batch_size=args.batch_size,
        learning_starts=args.learning_starts,
    )
    data = DMControlDataModule(args.env, env_steps=args.env_steps, eval_every=0)
    clock = LearningPhaseClock()
    trainer = pl.Trainer(
        max_epochs=1,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        callbacks=[clock],
    )
    with segment_kernel.forced_off() if loop else nullcontext():
        trainer.fit(agent, data)
    agent_steps = data.agent_steps - args.learning_starts
    return {
        "env_steps_per_s": agent_steps * data.action_repeat / clock.seconds,
        "updates_per_s": clock.updates / clock.seconds,
        **agent.parameter_counts(),
    }


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    bench = BenchRun("scalemoe", [MODULE], argv)
    import torch

    warnings.filterwarnings("ignore")
    torch.set_num_threads(args.threads)
    if args.env_steps // 2 <= args.learning_starts:
        print("--env-steps must leave agent steps after --learning-starts", file=sys.stderr)
        return 2
    if args.compare_loop:
        args.architectures += [LOOP_PREFIX + a for a in args.architectures if a.startswith("scalemoe")]
    runs: dict[str, list[dict]] = {a: [] for a in args.architectures}
    for rep in range(args.repeats):
        for arch in args.architectures:
            runs[arch].append(measure(arch, args, seed=rep))
            print(f"  {arch:18s} rep {rep}: {runs[arch][-1]['env_steps_per_s']:7.1f} env steps/s", flush=True)
    summary = {}
    for arch, results in runs.items():
        summary[arch] = {
            "env_steps_per_s": statistics.median(r["env_steps_per_s"] for r in results),
            "updates_per_s": statistics.median(r["updates_per_s"] for r in results),
            **{k: v for k, v in results[0].items() if k.endswith(("_total", "_active"))},
        }
    dense = summary.get("simba", {}).get("env_steps_per_s")
    print(
        f"\n{'architecture':18s} {'env steps/s':>12s} {'updates/s':>10s} {'critic active/total':>22s} {'vs dense':>9s}"
    )
    for arch, s in summary.items():
        s["ratio_vs_dense"] = s["env_steps_per_s"] / dense if dense else None
        ratio = f"{s['ratio_vs_dense']:.2f}x" if dense else "—"
        size = f"{s['critic_active']}/{s['critic_total']}"
        print(f"{arch:18s} {s['env_steps_per_s']:12.1f} {s['updates_per_s']:10.1f} {size:>22s} {ratio:>9s}")
    result = {
        "benchmark": "scalemoe env steps per second (training included, learning phase)",
        "settings": {k: v for k, v in vars(args).items() if k not in ("out", "leaderboard")},
        "results": summary,
        "runs": runs,
    }
    out = output_path("scalemoe", args.out, args.leaderboard, suffix=f"-critic{args.critic_hidden}")
    bench.write(result, out, threads=args.threads)
    return 0


if __name__ == "__main__":
    sys.exit(main())
