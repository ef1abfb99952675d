"""ScaleMoE task plugin: SAC with SimBa networks whose actor and critic are Mixtures of Experts (DeepMind Control).

Imports nothing heavy: ``zoo list`` loads every spec.
"""

from __future__ import annotations

from zoo.leaderboard.tables import Image, Section
from zoo.leaderboard.targets import NotWorse, WithinOfPublished
from zoo.registry import BenchmarkRow, ConformanceCase, MatrixRow, TaskSpec
from zoo.tuning.space import Float

# SimBa SAC, mean of 10 seeds, at 50k / 100k environment steps (SonyResearch/simba, results/sac_simba.csv)
PUBLISHED_SIMBA = {
    "cartpole-swingup": (835.0, 869.0),
    "reacher-easy": (845.0, 854.0),
    "walker-walk": (900.0, 951.0),
    "cheetah-run": (429.0, 559.0),
}
PUBLISHED_SOURCE = "SimBa (Lee et al., ICLR 2025), SonyResearch/simba results/sac_simba.csv, mean of 10 seeds"

DENSE_TWIN = "SimBa (dense twin)"
METHODS = {  # column -> config
    DENSE_TWIN: "simba.yaml",
    "ScaleMoE-output": "scalemoe_output.yaml",
    "ScaleMoE-feature": "scalemoe_feature.yaml",
    "SAC-MLP": "mlp.yaml",
}
QUICK = (
    "--data.init_args.env_steps=400",
    "--data.init_args.eval_every=200",
    "--data.init_args.eval_episodes=1",
    "--model.init_args.learning_starts=100",
    "--model.init_args.batch_size=64",
    "--model.init_args.critic_hidden=64",
)

# SimBa's reference critic (2 x 512) makes a paper-settings 50k-step run (40k updates) long on a CPU (see
# `zoo bench scalemoe` for the cost per update). The reduced rows keep everything of the paper settings (50k env
# steps, 5000 random agent steps, UTD 2, actor 1 x 128, 3 seeds) except the critic width.
REDUCED_CRITIC = 128
REQUIRED_ENVS = ("cartpole-swingup", "reacher-easy")


def _published(method: str, env: str) -> dict[str, float]:
    return {"test/return": PUBLISHED_SIMBA[env][0]} if method == DENSE_TWIN else {}


def _full_rows() -> list[BenchmarkRow]:
    rows = []
    for env, (_, at100k) in PUBLISHED_SIMBA.items():
        for method, config in METHODS.items():
            published = _published(method, env)
            rows.append(
                BenchmarkRow(
                    method=method,
                    dataset=f"{env} @50k",
                    config=config,
                    overrides=(f"--data.init_args.env={env}",),
                    seeds=(0, 1, 2),
                    published=published,
                    published_source=PUBLISHED_SOURCE if published else "",
                    quick_overrides=QUICK,
                    note=f"paper settings, 50k env steps; published SimBa at 100k: {at100k:.0f}" if published else "",
                )
            )
    return rows


def _reduced_rows() -> list[BenchmarkRow]:
    rows = []
    for env in REQUIRED_ENVS:
        for method, config in METHODS.items():
            overrides = [f"--data.init_args.env={env}"]
            reduced = method != "SAC-MLP"  # the MLP agent keeps its own reference size in both row groups
            note = "paper settings (50k env steps, 5000 random agent steps)"
            if reduced:
                overrides.append(f"--model.init_args.critic_hidden={REDUCED_CRITIC}")
                note += f" but critic width {REDUCED_CRITIC} (SimBa: 512); published SimBa uses the 512-wide critic"
            else:
                note += ", MLP SAC at its reference size (the critic-width reduction does not apply)"
            published = _published(method, env)
            rows.append(
                BenchmarkRow(
                    method=method,
                    dataset=f"{env} @50k, critic {REDUCED_CRITIC}",
                    config=config,
                    overrides=tuple(overrides),
                    seeds=(0, 1, 2),
                    published=published,
                    published_source=PUBLISHED_SOURCE if published else "",
                    quick_overrides=QUICK,
                    reduced=reduced,
                    note=note,
                )
            )
    return rows


# `zoo tune` spaces (issue 26): SAC's optimiser knobs, the same for ScaleMoE and its dense SimBa twin. SAC has no
# validation set: trials are scored on the last evaluation return during training (`tune_metric`), never the test.
_SPACE = {
    "model.init_args.lr": Float(3e-5, 1e-3, log=True),
    "model.init_args.weight_decay": Float(1e-4, 1e-1, log=True),
}
SEARCH_SPACES = {"ScaleMoE-output": _SPACE, DENSE_TWIN: _SPACE}
# The router x task table's row: cartpole-swingup with the 128-wide critic at 8k env steps (the benchmark: 50k),
# 3 trials per cell: an RL cell costs minutes per run, and the whole table must fit 8 hours.
_MATRIX_DATASET = f"cartpole-swingup @50k, critic {REDUCED_CRITIC}"
MATRIX = MatrixRow(
    row=f"ScaleMoE-output/{_MATRIX_DATASET}",
    dense=f"{DENSE_TWIN}/{_MATRIX_DATASET}",
    trials=3,
    overrides=(
        "--data.init_args.env_steps=8000",
        "--data.init_args.eval_every=4000",
        "--model.init_args.learning_starts=2000",
    ),
)

SCALEMOE = TaskSpec(
    name="scalemoe",
    description="ScaleMoE: SAC whose SimBa actor and critic are top-K MoEs (output- or feature-level gating), "
    "DeepMind Control Suite, vs its dense SimBa twin and MLP SAC",
    model="zoo_tasks.rl.sac:SACAgent",
    datamodules={"dm_control": "zoo_tasks.rl.data:DMControlDataModule"},
    config_dir="zoo_tasks.configs:scalemoe",
    default_config="scalemoe_output.yaml",
    benchmark=tuple(_reduced_rows() + _full_rows()),
    metrics=("test/return",),
    higher_is_better=("test/return",),
    extra_tables="zoo_tasks.rl.spec:TABLES",  # speed (with its target), curves, runs, routing
    targets=(
        WithinOfPublished(DENSE_TWIN, "test/return", within=0.10),  # a faithful SimBa before comparing against it
        *(NotWorse(method, DENSE_TWIN, "test/return") for method in METHODS if method.startswith("ScaleMoE")),
    ),
    benchmarks={"scalemoe": "zoo_tasks.rl.bench:main"},
    search_spaces=SEARCH_SPACES,
    tune_metric=("val/return", "max"),
    matrix=MATRIX,
    dense_twins=tuple((method, DENSE_TWIN) for method in METHODS if method.startswith("ScaleMoE")),
    # ScaleMoE's actor and two critics gated by 4 experts of width 8 (output- and feature-level) on cartpole-swingup,
    # updated once 8 random agent steps fill the replay buffer; a gate acts on one state at a time, so expert choice
    # is refused
    conformance=tuple(
        ConformanceCase(
            name=f"scalemoe-{gating}",
            config=f"scalemoe_{gating}.yaml",
            overrides=(
                *("--model.init_args.actor_hidden=8", "--model.init_args.critic_hidden=8"),
                *("--model.init_args.critic_blocks=1", "--model.init_args.num_experts=4", "--model.init_args.num_q=2"),
                *("--model.init_args.batch_size=16", "--model.init_args.learning_starts=8"),
                *("--model.init_args.updates_per_step=1", "--model.init_args.buffer_capacity=64"),
                *("--data.init_args.env_steps=40", "--data.init_args.eval_every=0", "--data.init_args.eval_episodes=1"),
            ),
            refuses=("expert_choice",),
            warmup_steps=7,
        )
        for gating in ("output", "feature")
    ),
)

# The page's own sections (``zoo.leaderboard.tables``): the speed benchmarks and their target, the learning curves
# (drawn by ``python -m zoo_tasks.rl.tables``), every run's speed, size and curve, and the gates' routing.
TABLES = (
    Section("zoo_tasks.rl.tables:speed"),
    Image("val/return vs environment steps", "curves.png", heading="Learning curves"),
    Section("zoo_tasks.rl.tables:runs"),
    Section("zoo_tasks.rl.tables:routing"),
)
