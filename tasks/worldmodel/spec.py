"""Task spec of WestWorld (one trajectory world model over many robots, system-aware MoE) -- imports nothing heavy."""

from __future__ import annotations

from zoo.leaderboard.tables import Column, Examples, Plot, Section, Table
from zoo.leaderboard.targets import BeatsOnAverage, NotWorse
from zoo.registry import BenchmarkRow, ConformanceCase, MatrixRow, TaskSpec
from zoo.tuning.space import Float

ZERO_SHOT = "zero-shot (Walker2d, Hopper)"
FEW_SHOT = "few-shot (HalfCheetah, 5k)"
TOKEN_METHODS = ("westworld", "dense", "no_structure", "trajworld")
SEEDS = (0, 1, 2)
QUICK = ("--data.init_args.pretrain_steps", "4", "--data.init_args.finetune_steps", "0")
QUICK_FEW_SHOT = ("--data.init_args.pretrain_steps", "4", "--data.init_args.finetune_steps", "2",
                  "--model.init_args.finetune_after", "4")  # fmt: skip
CPU_NOTE = "width 32 x 2 blocks, d_state 8 (paper 256 x 6, 64); 15 + 48-step windows (paper 50 + 150); 800 steps"


FLOORS = ("repeat_last", "mean")


def _zero_shot(method: str) -> BenchmarkRow:
    return BenchmarkRow(
        method=method,
        dataset=ZERO_SHOT,
        config=f"{method}.yaml",
        seeds=SEEDS if method not in FLOORS else (0,),
        quick_overrides=QUICK,
        reduced=method not in FLOORS,
        note=CPU_NOTE if method not in FLOORS else "nothing trained",
    )


def _scaling(method: str, robots: int) -> BenchmarkRow:
    return BenchmarkRow(
        method=method,
        dataset=f"scaling: {robots} robots",
        config=f"{method}.yaml",
        overrides=("--data.init_args.num_train_robots", str(robots)),
        seeds=(0,),
        quick_overrides=QUICK,
        reduced=True,
        note=f"pretraining on the first {robots} of the 12 robots; " + CPU_NOTE,
    )


def _few_shot(method: str, config: str, note: str) -> BenchmarkRow:
    return BenchmarkRow(
        method=method,
        dataset=FEW_SHOT,
        config=config,
        seeds=SEEDS if method not in FLOORS else (0,),
        quick_overrides=QUICK_FEW_SHOT if method == "westworld" else QUICK,
        reduced=method == "westworld",
        note=note,
    )


BENCHMARK = (
    *(_zero_shot(m) for m in (*TOKEN_METHODS, *FLOORS)),
    *(_scaling(m, n) for n in (3, 6) for m in ("westworld", "dense")),
    _few_shot("westworld", "westworld_fewshot.yaml", "800 pretraining + 300 fine-tuning steps; " + CPU_NOTE),
    _few_shot("mlp_ensemble", "mlp_ensemble_fewshot.yaml", "5 x MLP(3 x 200), 2000 steps on the 5k transitions"),
    _few_shot("repeat_last", "repeat_last_fewshot.yaml", "nothing trained"),
    _few_shot("mean", "mean_fewshot.yaml", "nothing trained"),
)

TARGETS = (
    BeatsOnAverage("westworld", ("dense", "trajworld", "no_structure"), "test/mae", datasets=(ZERO_SHOT,)),
    NotWorse("dense", "trajworld", "test/mae"),
    NotWorse("westworld", "mlp_ensemble", "test/mae"),
    NotWorse("westworld", "repeat_last", "test/mae"),
    NotWorse("westworld", "mean", "test/mae"),
)

# `zoo tune` spaces of the router x task table's row (issue 26); the router's own knobs come from
# zoo.tuning.router_knobs. Trials are scored on the validation windows of the pretraining robots (val/mae), never
# on the held-out robots.
_SPACE = {
    "model.init_args.lr": Float(3e-4, 3e-3, log=True),
    "model.init_args.weight_decay": Float(1e-6, 1e-3, log=True),
}
SEARCH_SPACES = {"westworld": _SPACE, "dense": _SPACE}
# The router x task table's row: zero-shot Walker2d / Hopper at half the pretraining steps (400 of 800). Estimated
# from the benchmark's records (407 s a WestWorld run, 590 s dense): ~2.9 h for 8 routers + the dense twin, 2 trials
# + 3 seeds each.
MATRIX = MatrixRow(
    row=f"westworld/{ZERO_SHOT}",
    dense=f"dense/{ZERO_SHOT}",
    trials=2,
)  # the benchmark's 800 pretraining steps: at 400 most cells had not left the mean-state floor (notes)


WESTWORLD = TaskSpec(
    name="westworld",
    description="WestWorld robot world model (Sys-MoE + structural embedding) vs dense / TrajWorld / MLP ensemble",
    model="zoo_tasks.worldmodel.module:WorldModel",
    datamodules={"westworld": "zoo_tasks.worldmodel.data:WestWorldDataModule"},
    config_dir="zoo_tasks.configs:westworld",
    default_config="westworld.yaml",
    benchmark=BENCHMARK,
    metrics=("test/mae", "test/mse"),
    datasets=(),
    extra_tables="zoo_tasks.worldmodel.spec:TABLES",
    targets=TARGETS,
    dense_twins=(("westworld", "dense"),),
    search_spaces=SEARCH_SPACES,
    matrix=MATRIX,
    tune_metric=("val/mae", "min"),
    # WestWorld at width 8 (2 blocks, top-2 of 4 experts) on windows of 3 + 4 steps of a few cartpole episodes of the
    # uniform policy, generated into the case's own folder; the system gate routes each sequence by its own system
    # token, so expert choice is refused
    conformance=(
        ConformanceCase(
            name="westworld",
            config="westworld.yaml",
            overrides=(
                *("--model.init_args.dim=8", "--model.init_args.heads=2", "--model.init_args.ffn_hidden=8"),
                *("--model.init_args.d_state=2", "--model.init_args.bins=16", "--model.init_args.prefix=3"),
                "--model.init_args.top_k=2",  # at 1, noisy top-k's gate gets no gradient without a load loss
                *("--data.init_args.data_dir={files}", "--data.init_args.policies=[uniform]"),
                *("--data.init_args.train_robots=[dmc_cartpole]", "--data.init_args.eval_robots=[dmc_cartpole]"),
                *("--data.init_args.train_episodes=2", "--data.init_args.val_episodes=1"),
                *("--data.init_args.test_episodes=1", "--data.init_args.episodes_per_shard=2"),
                *("--data.init_args.episode_len=10", "--data.init_args.prefix=3", "--data.init_args.horizon=4"),
                *("--data.init_args.batch_size=2", "--data.init_args.pretrain_steps=2"),
            ),
            refuses=("expert_choice",),
        ),
    ),
)

# The page's own sections (``zoo.leaderboard.tables``): zero-shot test/mae by pretraining robots (3 / 6 / 12; 12 is the
# zero-shot row), the system gate per robot, their figures and example rollouts.
SCALING = {"scaling: 3 robots": 3, "scaling: 6 robots": 6, "zero-shot (Walker2d, Hopper)": 12}
SCALING_METHODS = ("westworld", "dense")
TABLES = (
    Table(
        "Scaling: zero-shot test/mae vs pretraining robots",
        rows=("method",),
        columns=tuple(Column(f"{n} robots", "metrics.test/mae", datasets=(ds,)) for ds, n in SCALING.items()),
        methods=SCALING_METHODS,
        order="benchmark",
    ),
    Section("zoo_tasks.worldmodel.tables:gate_table"),
    Plot("scaling", "scaling.png", "zoo_tasks.worldmodel.tables:scaling_figure"),
    Plot("system gate", "system_gate.png", "zoo_tasks.worldmodel.tables:gate_figure"),
    Examples("Example rollouts (zero-shot robots, WestWorld seed 0)"),
)
