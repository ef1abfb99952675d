"""SPHERE task plugin: continual RL through a MetaWorld task sequence with dense PPO, top-k MoE PPO, SPHERE's
Parseval penalty and its unweighted ablation.

Imports nothing heavy: ``zoo list`` loads every spec.
"""

from __future__ import annotations

from zoo.leaderboard.tables import Plot, Section
from zoo.leaderboard.targets import BeatsBy, NotWorse
from zoo.registry import BenchmarkRow, ConformanceCase, TaskSpec

# The CPU-scale sequence: a sub-sequence of CW10 in CW10's order (positions 3, 6, 9), the tasks on which dense
# PPO alone reaches non-trivial success within the per-task budget (leaderboard/notes/sphere.md, single-task table).
SEQUENCE = ("faucet-close", "handle-press-side", "window-close")
STEPS_PER_TASK = 196_608  # 96 PPO iterations of 8 envs x 256 steps; sized in leaderboard/notes/sphere.md
SEEDS = (0, 1, 2)
# The reference script's sbx KL-adaptive rate (target KL 0.03, adapted after every minibatch) swung between its
# bounds (1e-5, 1e-2) in our runs and dense PPO never succeeded; with it off (SB3's linear 3e-4 -> 1e-4 over the
# first half of each task, the reference's lr setting) the single-task check succeeded (notes). Every row sets it.
NO_TARGET_KL = "--model.init_args.target_kl=null"

DENSE, MOE, SPHERE_METHOD, ABLATION = "Dense PPO", "MoE PPO", "SPHERE", "SPHERE (no routing weights)"
METHODS = {  # column -> config
    DENSE: "dense_ppo.yaml",
    MOE: "moe_ppo.yaml",
    SPHERE_METHOD: "sphere.yaml",
    ABLATION: "sphere_unweighted.yaml",
}
# SPHERE paper (ICML 2026), average success under continual RL, SPHERE vs unregularised top-k MoE PPO.
PUBLISHED = {SPHERE_METHOD: 0.49, MOE: 0.21}
PUBLISHED_HUMANOIDBENCH = {SPHERE_METHOD: 0.54, MOE: 0.36}
PUBLISHED_SOURCE = (
    "SPHERE (Luo et al., ICML 2026, arXiv 2605.04712), average success under continual RL: MetaWorld CW10 (10 tasks "
    "at the paper's budget) SPHERE 0.49 vs top-k MoE PPO 0.21; HumanoidBench (5 tasks, 10M steps each) 0.54 vs 0.36. "
    "A different scale from these rows"
)
QUICK = (
    "--data.init_args.tasks=[faucet-close,handle-press-side]",
    "--data.init_args.steps_per_task=256",
    "--data.init_args.num_envs=2",
    "--data.init_args.n_steps=64",
    "--data.init_args.eval_episodes=1",
    "--data.init_args.eval_envs=1",
    "--model.init_args.width=32",
    "--model.init_args.n_epochs=2",
    "--model.init_args.batch_size=64",
    "--model.init_args.ntk_probe=4",
)


SINGLE = "Dense PPO, one task alone"


def _single_task_rows() -> list[BenchmarkRow]:
    """The issue's first table: dense PPO on each task of the sequence alone, at the per-task budget (a comparison
    where every method scores 0 says nothing)."""
    return [
        BenchmarkRow(
            method=SINGLE,
            dataset=f"{task} alone @{STEPS_PER_TASK // 1024}k",
            config="dense_ppo.yaml",
            overrides=(
                f"--data.init_args.tasks=[{task}]",
                f"--data.init_args.steps_per_task={STEPS_PER_TASK}",
                NO_TARGET_KL,
            ),
            seeds=SEEDS,
            quick_overrides=QUICK[1:] + (f"--data.init_args.tasks=[{task}]",),
            reduced=True,
            note="single-task check of the sequence's budget: the task's success is test/avg_success",
        )
        for task in SEQUENCE
    ]


def _rows() -> list[BenchmarkRow]:
    rows = []
    dataset = f"CW10 sub-sequence {'→'.join(SEQUENCE)} @{STEPS_PER_TASK // 1024}k/task"
    for method, config in METHODS.items():
        published = {"test/avg_success": PUBLISHED[method]} if method in PUBLISHED else {}
        rows.append(
            BenchmarkRow(
                method=method,
                dataset=dataset,
                config=config,
                overrides=(
                    f"--data.init_args.tasks=[{','.join(SEQUENCE)}]",
                    f"--data.init_args.steps_per_task={STEPS_PER_TASK}",
                    NO_TARGET_KL,
                ),
                seeds=SEEDS,
                published=published,
                published_source=PUBLISHED_SOURCE if published else "",
                quick_overrides=QUICK,
                reduced=True,
                note=f"CPU scale: {len(SEQUENCE)} of the 10 CW10 tasks (in CW10's order), {STEPS_PER_TASK} env steps "
                "per task; reference PPO settings otherwise except target_kl off (linear lr 3e-4 -> 1e-4)"
                + ("; the published number is CW10 at the paper's scale" if published else ""),
            )
        )
    return rows


def probe_overrides(config: dict) -> list[str]:
    """The re-verification probe's settings (``zoo.reverify``): the test needs the whole sequence trained, so the
    probe trains every task for one rollout (the same PPO iterations, stage ends and evaluations, shorter) with one
    evaluation episode, to the end of the sequence."""
    data = (config.get("data") or {}).get("init_args") or {}
    rollout = int(data.get("num_envs", 8)) * int(data.get("n_steps", 256))
    return [
        f"--data.init_args.steps_per_task={rollout}",
        "--data.init_args.eval_episodes=1",
        "--trainer.max_steps=-1",
    ]


SPHERE = TaskSpec(
    name="sphere",
    description="SPHERE: a Parseval penalty on routing-weighted expert features keeps a top-k MoE PPO actor's "
    "spectral plasticity through a MetaWorld task sequence (CW10), vs dense PPO, unregularised MoE PPO, ablation",
    model="zoo_tasks.rl.continual.ppo:ContinualPPO",
    datamodules={"metaworld": "zoo_tasks.rl.continual.data:MetaWorldSequenceDataModule"},
    config_dir="zoo_tasks.configs:sphere",
    default_config="sphere.yaml",
    benchmark=tuple(_single_task_rows() + _rows()),
    metrics=("test/avg_success", "test/forgetting", "test/avg_stage_success", "test/effective_rank"),
    higher_is_better=("test/avg_success", "test/avg_stage_success", "test/effective_rank"),
    extra_tables="zoo_tasks.rl.continual.spec:TABLES",  # speed, r_e target, success matrix, r_e per stage, routing
    targets=(
        # the issue's "SPHERE >= 1.5x the unregularised MoE's average success" (means over the seeds); its "r_e
        # higher at every stage boundary" needs the per-stage ranks and is judged in the extra tables: NotWorse on
        # the final r_e is its weaker record-level form, and NotWorse on the diagonal success (each task just after
        # training on it) a weaker companion of the success claim
        BeatsBy(SPHERE_METHOD, (MOE,), "test/avg_success", ratio=1.5),
        NotWorse(SPHERE_METHOD, MOE, "test/effective_rank"),
        NotWorse(SPHERE_METHOD, MOE, "test/avg_stage_success"),
    ),
    benchmarks={"sphere": "zoo_tasks.rl.continual.bench:main"},
    dense_twins=((SPHERE_METHOD, DENSE),),
    probe_overrides="zoo_tasks.rl.continual.spec:probe_overrides",
    # SPHERE's top-2 actor of 4 experts of width 8 (sparse and dense dispatch) on faucet-close: the task's two PPO
    # iterations of a 16-step rollout, then its evaluation; a gate acts on one state at a time, so expert choice is
    # refused
    conformance=tuple(
        ConformanceCase(
            name=f"sphere-{dispatch}",
            config="sphere.yaml",
            overrides=(
                *(f"--model.init_args.dispatch={dispatch}", "--model.init_args.width=8", "--model.init_args.depth=1"),
                *("--model.init_args.num_experts=4", "--model.init_args.batch_size=8", "--model.init_args.n_epochs=1"),
                *("--model.init_args.ntk_probe=4", "--model.init_args.checkpoint_every_s=0"),
                *("--data.init_args.tasks=[faucet-close]", "--data.init_args.steps_per_task=32"),
                *("--data.init_args.num_envs=1", "--data.init_args.n_steps=16"),
                *("--data.init_args.eval_episodes=1", "--data.init_args.eval_envs=1"),
            ),
            refuses=("expert_choice",),
        )
        for dispatch in ("sparse", "dense")
    ),
)

# The page's own sections (``zoo.leaderboard.tables``), all from ``tables``: the speed benchmark and its target, the r_e
# target judged on the success matrices, the matrices, r_e(K) per stage (a table and a figure), every sequence run and
# the expert load per task.
TABLES = (
    Section("zoo_tasks.rl.continual.tables:speed"),
    Section("zoo_tasks.rl.continual.tables:targets"),
    Section("zoo_tasks.rl.continual.tables:success_matrices"),
    Section("zoo_tasks.rl.continual.tables:ranks"),
    Plot("r_e(K) at each stage boundary", "effective_rank_by_stage.png", "zoo_tasks.rl.continual.tables:rank_figure"),
    Section("zoo_tasks.rl.continual.tables:runs"),
)
