"""SEER's task spec (tasks/timeseries/spec.py) and its composable configs (configs/seer/): 60 rows, each one
method's base config plus the few keys of its dataset/horizon cell, resolving to exactly the config of the
per-cell file it replaces (the 60 files of commit 79e6fd0, the code that wrote the leaderboard records)."""

from __future__ import annotations

import re
import subprocess

import pytest
import yaml
from zoo_testing import REPO, fit_parser

from zoo.registry import get_task
from zoo_tasks.timeseries.spec import DATA, DATASETS, HORIZONS, METHODS, SEER

OLD_CONFIGS = "79e6fd0"  # the last commit with one YAML file per (dataset, horizon, method)
CELL_KEYS = {
    "--data.init_args.dataset",
    "--data.init_args.file",
    "--data.init_args.split",
    "--data.init_args.pred_len",
    "--model.init_args.num_channels",
    "--model.init_args.pred_len",
}


def _pairs(overrides: tuple[str, ...]) -> dict[str, str]:
    assert len(overrides) % 2 == 0, overrides
    return dict(zip(overrides[::2], overrides[1::2], strict=True))


def test_spec_rows_compose_a_base_config_with_their_cell():
    assert get_task("seer").benchmark == SEER.benchmark  # the installed entry point is this spec
    assert len(SEER.benchmark) == len(DATASETS) * len(HORIZONS) * len(METHODS) == 60
    assert sorted({row.config for row in SEER.benchmark}) == ["dense.yaml", "patchtst.yaml", "seer.yaml"]
    for row in SEER.benchmark:
        ds, horizon = row.dataset.split("/")
        assert row.config == f"{row.method}.yaml" and SEER.config_path(row.config).is_file()
        cell = _pairs(row.overrides)
        assert set(cell) - CELL_KEYS <= {"--trainer.max_epochs"}
        assert cell["--model.init_args.pred_len"] == cell["--data.init_args.pred_len"] == horizon
        assert cell["--data.init_args.file"].lower().startswith(ds.lower())
        assert cell["--model.init_args.num_channels"] == ("21" if ds == "Weather" else "7")
        if row.method in ("seer", "patchtst"):
            assert row.published and row.published_source
        assert row.reduced == ("--trainer.max_epochs" in cell)
    assert set(DATA) == set(DATASETS)


@pytest.mark.parametrize("method", METHODS)
def test_base_configs_state_each_shape_once(method):
    text = SEER.config_path(f"{method}.yaml").read_text()
    assert re.findall(r"^\s+(seq_len|pred_len|num_channels): (.+)$", text, re.M) == [
        ("seq_len", "&seq_len 96"),
        ("pred_len", "&pred_len 96"),
        ("num_channels", "null  # from the data: the CSV's channels (7 for ETT)"),
        ("seq_len", "*seq_len"),
        ("pred_len", "*pred_len"),
    ]
    config = yaml.safe_load(text)
    assert config["data"]["init_args"]["pred_len"] == config["model"]["init_args"]["pred_len"] == 96
    dense = config["model"]["init_args"].get("moe_embedding", True) is False
    assert dense == (method == "dense")


def _old_config(name: str) -> str | None:
    out = subprocess.run(
        ["git", "show", f"{OLD_CONFIGS}:configs/seer/{name}"], cwd=REPO, capture_output=True, text=True
    )
    return out.stdout if out.returncode == 0 else None


@pytest.fixture(scope="module")
def resolve():
    """The ``zoo fit`` parser without instantiating anything: args -> resolved config dict."""
    parser = fit_parser(SEER.config_path("seer.yaml"))

    def _resolve(args: list[str]) -> dict:
        config = parser.parse_args(args).as_dict()
        config.pop("config", None)  # the file names, which is what changed
        return config

    return _resolve


def test_every_row_resolves_to_the_config_of_its_old_file(resolve, tmp_path):
    if _old_config("etth1_96_seer.yaml") is None:
        pytest.skip(f"commit {OLD_CONFIGS} is not in this clone (shallow?)")
    for row in SEER.benchmark:
        ds, horizon = row.dataset.split("/")
        name = f"{ds.lower()}_{horizon}_{row.method}.yaml"
        old = tmp_path / name
        old.write_text(_old_config(name))
        epochs = _pairs(row.overrides).get("--trainer.max_epochs")
        old_args = ["--config", str(old), *(("--trainer.max_epochs", epochs) if epochs else ())]
        new = resolve(["--config", str(SEER.config_path(row.config)), *row.overrides])
        assert new == resolve(old_args), f"{row.method} {row.dataset}"
        assert new["model"]["init_args"]["pred_len"] == int(horizon)  # the comparison sees the cell's values
