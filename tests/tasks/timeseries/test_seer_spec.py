"""SEER's task spec (tasks/timeseries/spec.py): 60 rows, each with its config, the reduced flag and the published
numbers."""

from __future__ import annotations

import yaml

from zoo.registry import get_task
from zoo_tasks.timeseries.spec import DATASETS, HORIZONS, METHODS, SEER


def test_spec_rows_configs_and_published_numbers():
    assert get_task("seer").benchmark == SEER.benchmark  # the installed entry point is this spec
    assert len(SEER.benchmark) == len(DATASETS) * len(HORIZONS) * len(METHODS) == 60
    for row in SEER.benchmark:
        config = yaml.safe_load(SEER.config_path(row.config).read_text())
        ds, horizon = row.dataset.split("/")
        assert config["model"]["init_args"]["pred_len"] == config["data"]["init_args"]["pred_len"] == int(horizon)
        assert config["data"]["init_args"]["file"].lower().startswith(ds.lower())
        assert config["model"]["init_args"]["num_channels"] == (21 if ds == "Weather" else 7)
        if row.method == "dense":
            assert config["model"]["init_args"]["moe_embedding"] is False
        if row.method in ("seer", "patchtst"):
            assert row.published and row.published_source
        assert row.reduced == ("--trainer.max_epochs" in row.overrides)
