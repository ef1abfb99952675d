"""The ScaleMoE plugin: registered, every benchmark row's config builds through the zoo CLI, rows are honest."""

import pytest

from tasks.rl.spec import PUBLISHED_SIMBA, SCALEMOE
from zoo.registry import get_task


def test_registered_through_the_entry_point():
    assert get_task("scalemoe") is SCALEMOE


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
