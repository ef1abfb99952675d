"""Drive SimBa's own training loop (SonyResearch/simba ``run.py``'s ``run``) at a short-training comparison's settings.

Run with their Python in a scratch copy of their checkout (``scripts.parity.short_simba``)::

    cd <copy of simba> && python /abs/scripts/parity/simba_driver.py --seed 0 --env_steps 6000 --warmup 1000

Their ``run.run`` is called unchanged with Hydra overrides; only what it would send to Weights & Biases is
replaced: ``wandb`` is not installed, so a stand-in module is registered before their code is imported, and
``run.WandbTrainerLogger`` is swapped for ``PrintLogger``, which prints each logged step as one JSON line
(``SIMBA_LOG {"step": ..., "avg_return": ...}``) for ``short_simba`` to parse. Video recording is switched off by
override (``recording_per_interaction_step`` past the budget); evaluation and logging happen once, at the last
interaction step (plus their step-0 evaluation). Nothing here changes how their agent acts, learns or evaluates.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import types

# one thread, CPU only; set before their code imports jax
os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MUJOCO_GL", "egl")

MARK = "SIMBA_LOG "


class PrintLogger:
    """Stands in for their ``WandbTrainerLogger``: averages the numbers given since the last reset, prints them."""

    def __init__(self, cfg) -> None:
        self.reset()

    def update_metric(self, **kwargs) -> None:
        for key, value in kwargs.items():
            if isinstance(value, (int, float)):
                total, count = self.sums.get(key, (0.0, 0))
                self.sums[key] = (total + float(value), count + 1)

    def log_metric(self, step: int) -> None:
        averages = {key: total / count for key, (total, count) in self.sums.items()}
        print(MARK + json.dumps({"step": step, **averages}, sort_keys=True), flush=True)

    def reset(self) -> None:
        self.sums: dict[str, tuple[float, int]] = {}


def _no_wandb() -> None:
    """Register a do-nothing ``wandb`` so their modules import (they only log and make videos with it)."""
    if "wandb" in sys.modules:
        return
    stub = types.ModuleType("wandb")
    stub.init = stub.log = lambda *args, **kwargs: None
    stub.Video = lambda *args, **kwargs: None
    sys.modules["wandb"] = stub


def overrides(seed: int, env_steps: int, warmup: int, env: str, eval_episodes: int, critic_hidden: int) -> list[str]:
    """Hydra overrides of their ``configs/base.yaml`` (agent sac_simba, buffer numpy_uniform) for the comparison."""
    interaction_steps = env_steps // 2  # their dmc configs' action_repeat 2
    return [
        "env=dmc_em",  # cartpole is an easy/medium DMC task (dmc_hard differs only in name and budget)
        f"env.env_name={env}",
        f"env.num_env_steps={env_steps}",
        f"seed={seed}",
        f"buffer.min_length={warmup}",
        f"agent.critic_hidden_dim={critic_hidden}",
        f"num_eval_episodes={eval_episodes}",
        f"evaluation_per_interaction_step={interaction_steps}",
        f"logging_per_interaction_step={interaction_steps}",
        f"recording_per_interaction_step={10 * interaction_steps}",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--env_steps", type=int, required=True, help="environment (control) steps")
    parser.add_argument("--warmup", type=int, required=True, help="random agent steps before the first update")
    parser.add_argument("--env", default="cartpole-swingup")
    parser.add_argument("--eval_episodes", type=int, default=10)
    parser.add_argument("--critic_hidden", type=int, default=512, help="critic width (their sac_simba: 512)")
    args = parser.parse_args()

    _no_wandb()
    sys.path.insert(0, os.getcwd())  # their checkout: run.py and scale_rl
    import run  # their run.py

    run.WandbTrainerLogger = PrintLogger
    run.run(
        {
            "config_path": "./configs",
            "config_name": "base",
            "overrides": overrides(
                args.seed, args.env_steps, args.warmup, args.env, args.eval_episodes, args.critic_hidden
            ),
        }
    )


if __name__ == "__main__":
    main()
