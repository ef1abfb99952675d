"""The ScaleMoE plugin: registered, every benchmark row's config builds through the zoo CLI, rows are honest."""

import pytest

from tasks.rl.spec import PUBLISHED_SIMBA, SCALEMOE
from zoo.registry import get_task


def test_registered_through_the_entry_point():
    assert get_task("scalemoe") is SCALEMOE


@pytest.mark.parametrize("config", sorted({row.config for row in SCALEMOE.benchmark}))
def test_each_config_builds_agent_and_environment(config):
    from zoo.cli.lightning_cli import ZooCLI

    row = next(r for r in SCALEMOE.benchmark if r.config == config and r.reduced)
    cli = ZooCLI(args=["--config", str(SCALEMOE.config_path(config)), *row.overrides], run=False)
    assert type(cli.model).__name__ == "SACAgent" and cli.model.hparams.architecture in config.replace("_", "-")
    assert cli.datamodule.env == row.dataset.split(" ")[0]
    assert cli.datamodule.env_steps == 10_000


def test_rows_flag_reduced_settings_and_quote_published_simba_only_at_its_budget():
    reduced = [r for r in SCALEMOE.benchmark if r.reduced]
    full = [r for r in SCALEMOE.benchmark if not r.reduced]
    assert reduced and all(r.note and not r.published for r in reduced)
    assert {r.dataset for r in full} == {f"{env} @50k" for env in PUBLISHED_SIMBA}
    assert all(len(r.seeds) >= 3 for r in full)
    for row in full:
        if row.method == "SimBa (dense twin)":
            assert row.published == {"test/return": PUBLISHED_SIMBA[row.dataset.split(" ")[0]][0]}
