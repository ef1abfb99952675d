"""The ScaleMoE plugin: registered, every benchmark row's config builds through the zoo CLI, rows are honest."""

import pytest

from zoo.registry import get_task
from zoo_tasks.rl.spec import PUBLISHED_SIMBA, SCALEMOE


def test_registered_through_the_entry_point():
    assert get_task("scalemoe") is SCALEMOE


def test_spec_brings_its_benchmark_program():
    """``zoo bench scalemoe`` is found through the spec (the core names no task); the target is the bench's main."""
    import importlib

    from zoo.registry import benchmarks
    from zoo_tasks.rl import bench

    module, _, function = benchmarks()["scalemoe"].partition(":")
    assert getattr(importlib.import_module(module), function) is bench.main


@pytest.mark.parametrize("config", sorted({row.config for row in SCALEMOE.benchmark}))
def test_each_config_builds_agent_and_environment(config):
    from zoo.cli.lightning_cli import ZooCLI

    row = next(r for r in SCALEMOE.benchmark if r.config == config and "critic" in r.dataset)
    cli = ZooCLI(args=["--config", str(SCALEMOE.config_path(config)), *row.overrides], run=False)
    assert type(cli.model).__name__ == "SACAgent" and cli.model.hparams.architecture in config.replace("_", "-")
    assert cli.datamodule.env == row.dataset.split(" ")[0]
    assert cli.datamodule.env_steps == 50_000 and cli.model.hparams.learning_starts == 5000
    if config != "mlp.yaml":
        assert cli.model.hparams.critic_hidden == 128


@pytest.mark.parametrize("router", ["topk", "noisy_topk"])
def test_the_gate_router_is_a_config_key(router):
    from zoo.cli.lightning_cli import ZooCLI

    overrides = [f"--model.init_args.router={router}"] if router != "topk" else []
    cli = ZooCLI(args=["--config", str(SCALEMOE.config_path("scalemoe_feature.yaml")), *overrides], run=False)
    assert cli.model.hparams.router == router and cli.model.hparams.router_kwargs is None


def test_a_router_that_cannot_gate_a_state_fails_when_the_config_is_read():
    from zoo.cli.lightning_cli import ZooCLI

    config = str(SCALEMOE.config_path("scalemoe_output.yaml"))
    # ConfigError is a ValueError; jsonargparse may wrap it, the one line naming the router stays in the message
    with pytest.raises(ValueError, match="router 'expert_choice' cannot route ScaleMoE's per-state gate"):
        ZooCLI(args=["--config", config, "--model.init_args.router=expert_choice"], run=False)


def test_rows_flag_reduced_settings_and_quote_published_simba_beside_the_dense_twin():
    reduced = [r for r in SCALEMOE.benchmark if r.reduced]
    assert reduced and all("critic width 128" in r.note for r in reduced)
    assert {r.method for r in reduced} == {"SimBa (dense twin)", "ScaleMoE-output", "ScaleMoE-feature"}
    paper = [r for r in SCALEMOE.benchmark if "critic" not in r.dataset]
    assert {r.dataset for r in paper} == {f"{env} @50k" for env in PUBLISHED_SIMBA}
    assert all(len(r.seeds) >= 3 for r in SCALEMOE.benchmark)
    for row in SCALEMOE.benchmark:
        env = row.dataset.split(" ")[0]
        expected = {"test/return": PUBLISHED_SIMBA[env][0]} if row.method == "SimBa (dense twin)" else {}
        assert row.published == expected


def test_targets_table_judges_means_over_seeds():
    from zoo.leaderboard.record import RunRecord
    from zoo_tasks.rl.tables import _target_lines

    def rec(method, dataset, ret, seed):
        return RunRecord(
            task="scalemoe",
            method=method,
            dataset=dataset,
            metrics={"test/return": ret},
            seed=seed,
            config={},
            versions={},
            wall_time_s=1.0,
            commit="",
            machine={},
        )

    task = "cartpole-swingup @50k, critic 128"
    records = [
        rec("SimBa (dense twin)", task, 800.0, 0),  # mean 770: -8% of the published 835, within 10%
        rec("SimBa (dense twin)", task, 740.0, 1),
        rec("ScaleMoE-output", task, 780.0, 0),
        rec("ScaleMoE-feature", task, 700.0, 0),
    ]
    bench = {
        512: ("b.json", {"results": {"simba": {"ratio_vs_dense": 1.0}, "scalemoe-output": {"ratio_vs_dense": 0.69}}})
    }
    text = "\n".join(_target_lines(records, bench))
    assert f"| dense twin within 10% of published SimBa | {task} | 770.0 (n=2) vs 835 (-8%) | ✓ |" in text
    assert f"| ScaleMoE-output >= dense twin | {task} | 780.0 (n=1) vs 770.0 (n=2) | ✓ |" in text
    assert f"| ScaleMoE-feature >= dense twin | {task} | 700.0 (n=1) vs 770.0 (n=2) | ✗ |" in text
    assert "| scalemoe-output env steps/s >= 0.7x dense | critic width 512 (benchmark) | 0.69x | ✗ |" in text
    assert "simba env steps/s" not in text
