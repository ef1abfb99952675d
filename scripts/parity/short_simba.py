"""SimBa SAC on cartpole-swingup: their JAX code (SonyResearch/simba ``run.py``, agent ``sac_simba``) against our
scalemoe task's dense SimBa twin (configs/scalemoe/simba.yaml), a short budget with a reduced warm-up.

Their ``run.py`` logs only to Weights & Biases, evaluates every 25k interaction steps and records a video at the
end, so their side runs through ``scripts/parity/simba_driver.py`` (ours), which calls their ``run.run`` with
Hydra overrides and prints what it logs; see that file. Their whole checkout is their folder::

    python -m scripts.parity.short_training simba-cartpole-swingup --side theirs --seeds 0 1 2 \\
        --upstream /tmp/upstream/simba --python /tmp/parity-venv-simba/bin/python
    python -m scripts.parity.short_training simba-cartpole-swingup --side ours --seeds 0 1 2
"""

from __future__ import annotations

import json
from pathlib import Path

from scripts.parity.short_spec import ShortTraining

ENV = "cartpole-swingup"
# The budget of the scalemoe task's router x task row (tasks/rl/spec.py MATRIX): 8k environment (control) steps =
# 4000 agent steps at action repeat 2, the first 2000 random, and the 128-wide critic of its reduced rows
# (REDUCED_CRITIC); SimBa's 512-wide critic costs ~10x more per update on a CPU core.
ENV_STEPS = 8000
WARMUP = 2000  # random agent steps before the first update (theirs: buffer.min_length; ours: learning_starts)
CRITIC_HIDDEN = 128
EVAL_EPISODES = 10
DRIVER = Path(__file__).resolve().parent / "simba_driver.py"
MARK = "SIMBA_LOG "


def _simba_theirs(seed: int, mirror: Path) -> list[str]:
    """Their ``run.run`` (configs/base.yaml: sac_simba, numpy_uniform, dmc) via our driver; no dataset is read."""
    return [
        str(DRIVER),
        *("--seed", str(seed), "--env", ENV, "--env_steps", str(ENV_STEPS), "--warmup", str(WARMUP)),
        *("--eval_episodes", str(EVAL_EPISODES), "--critic_hidden", str(CRITIC_HIDDEN)),
    ]


def _simba_parse(output: str) -> dict[str, float]:
    """The driver's last logged step (their final evaluation, at the last interaction step) -> test/return."""
    logged = [json.loads(line[len(MARK) :]) for line in output.splitlines() if line.startswith(MARK)]
    if not logged:
        raise ValueError(f"their run printed no {MARK.strip()} line")
    last = logged[-1]
    if last["step"] != ENV_STEPS or "avg_return" not in last:
        raise ValueError(f"their last logged step is {last['step']} (expected {ENV_STEPS}) or has no avg_return")
    return {"test/return": float(last["avg_return"])}


COMPARISONS = (
    ShortTraining(
        name="simba-cartpole-swingup",
        task="scalemoe",
        method="simba",
        dataset=f"{ENV} @{ENV_STEPS // 1000}k, critic {CRITIC_HIDDEN}",
        budget=f"DMC {ENV}, action repeat 2, {ENV_STEPS} env steps ({ENV_STEPS // 2} agent steps, the first "
        f"{WARMUP} random), UTD 2 ({2 * (ENV_STEPS // 2 - WARMUP + 1)} updates), batch 256; SAC with SimBa actor "
        f"1 block x 128 and one critic 2 blocks x {CRITIC_HIDDEN}, AdamW lr 1e-4 / wd 1e-2, temperature 0.01 "
        "(Adam 1e-4), target entropy -|A|/2, tau 0.005, gamma 0.99, running observation normalisation; the final "
        f"policy's greedy return, mean of {EVAL_EPISODES} episodes",
        metrics=("test/return",),
        higher_is_better=("test/return",),
        upstream="SonyResearch/simba",
        upstream_commit="7d0358b1f1fa3404fc5ea0ffedf9dc1424b49a45",
        ours=(
            *("--config", "configs/scalemoe/simba.yaml", "--data.init_args.env", ENV),
            *("--data.init_args.env_steps", str(ENV_STEPS), "--data.init_args.eval_every", "0"),
            *("--data.init_args.eval_episodes", str(EVAL_EPISODES)),
            *("--model.init_args.learning_starts", str(WARMUP), "--model.init_args.critic_hidden", str(CRITIC_HIDDEN)),
        ),
        theirs_folder="",  # the checkout itself
        their_packages=("jax", "flax", "optax", "numpy"),
        theirs=_simba_theirs,
        parse=_simba_parse,
        differences=(
            "theirs is JAX (flax, optax, tensorflow-probability), ours PyTorch: the same seed gives other initial "
            "weights, replay batches, policy noise and warm-up actions (theirs: gymnasium's Box.sample, and their "
            "agent also draws a discarded policy action at every warm-up step); one update is pinned equal in "
            "tests/parity/test_simba.py",
            "their LayerNorms use flax's epsilon 1e-6, ours torch's 1e-5 (pinned in tests/parity)",
            "theirs initialises the actor's mean and log-std heads as two separate orthogonal matrices, ours as "
            "one orthogonal (2|A| x 128) head",
            "theirs evaluates the untrained policy before training (their run.py's step-0 evaluation, 10 "
            "episodes), which moves their evaluation environment and agent RNG on; ours does not",
            "their evaluation environment is seeded like the training environment (task random = seed), ours "
            "with seed + 10000",
            "their observation statistics leave out the run's first reset observation (their normaliser updates "
            "from interaction step 2 on), ours include it",
            "their side runs with this machine's gymnasium 1.4.0, dm-control 1.0.28 and mujoco 3.3.0 (their "
            "requirements pin 1.0.0a2, 1.0.20 and 3.1.6) and without wandb (scripts/parity/simba_driver.py "
            "prints what they log); ours uses the same dm-control and mujoco",
        ),
    ),
)
