"""The ScaleMoE plugin: registered, brings its bench, every benchmark row's config builds through the zoo CLI, the
gate's router is a config key, rows are honest."""

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
