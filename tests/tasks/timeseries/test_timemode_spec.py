"""TimeMoDE's spec: every row's config exists and builds, targets name methods that have rows, the unseen
domains are never pre-training domains, the bench program runs, and a missing ``ts-corpus`` says where to get it."""

from __future__ import annotations

import pytest
from zoo_testing import REPO, fit_parser

from zoo.data import resolve
from zoo.errors import DatasetNotFoundError
from zoo.leaderboard.targets import AtLeast
from zoo.registry import discover
from zoo_tasks.timeseries.generation import bench
from zoo_tasks.timeseries.generation.corpus import PRETRAIN_DOMAINS, UNSEEN_DOMAINS
from zoo_tasks.timeseries.generation.spec import ETTH, PRETRAIN, TIMEMODE, UNSEEN


def test_the_entry_point_loads_this_spec():
    loads = {load.name: load for load in discover()}
    assert loads["timemode"].error is None and loads["timemode"].spec is TIMEMODE


def test_rows_configs_and_targets_agree():
    methods = {row.method for row in TIMEMODE.benchmark}
    assert methods == {"timemode", "dense", "no_prompt", "no_timestep", "bootstrap", "timevae"}
    for row in TIMEMODE.benchmark:
        assert TIMEMODE.config_path(row.config).is_file(), row.config
        assert row.reduced == (row.method not in ("bootstrap", "timevae"))  # TimeVAE runs its reference size
    paired = {(r.method, r.dataset): r.seeds for r in TIMEMODE.benchmark}
    assert paired["timemode", "corpus/24"] == paired["dense", "corpus/24"] == (0, 1, 2)  # >= 3 paired seeds
    for target in TIMEMODE.targets:
        assert {target.method, *getattr(target, "others", ())} <= methods
        assert target.metric in TIMEMODE.metrics


def test_etth_rows_name_their_configs_the_unconditional_data_and_the_issue_targets():
    rows = {r.method: r for r in TIMEMODE.benchmark if r.dataset == ETTH}
    assert sorted(rows) == ["dense", "timemode"]
    for method, row in rows.items():
        assert row.config == f"etth_{method}.yaml" and TIMEMODE.config_path(row.config).is_file()
        assert row.seeds == (0, 1, 2) and row.reduced and "18k" in row.note
        config = fit_parser(TIMEMODE.config_path(row.config)).parse_args(
            ["--config", str(TIMEMODE.config_path(row.config)), *row.quick_overrides]
        )
        model, data = config.model.init_args, config.data
        assert data.class_path.endswith("MultivariateWindowsDataModule") and data.init_args.file == "ETTh1.csv"
        assert model.prompted is False and model.moe is (method == "timemode") and model.metric_repeats == 1
        assert model.metric_iterations == {"disc": 20, "pred": 20, "cfid": 5} and config.trainer.max_steps == 2
    assert rows["dense"].published == {
        "Diffusion-TS:test/disc": 0.061,
        "Diffusion-TS:test/pred": 0.119,
        "Diffusion-TS:test/cfid": 0.116,
    }
    assert "Diffusion-TS" in rows["dense"].published_source
    goals = {(t.method, t.metric, t.value) for t in TIMEMODE.targets if isinstance(t, AtLeast) and t.dataset == ETTH}
    assert goals == {("dense", "test/disc", 0.10), ("timemode", "test/disc", 0.061)}


def test_every_diffusion_row_samples_from_its_references_weight_average():
    """TimeDP's LitEma on the corpus DiT rows, Diffusion-TS's EMA on the ETTh rows; TimeVAE, bootstrap: none."""
    for row in TIMEMODE.benchmark:
        path = TIMEMODE.config_path(row.config)
        config = fit_parser(path).parse_args(["--config", str(path), *row.quick_overrides])
        emas = [c.init_args for c in config.trainer.callbacks or [] if c.class_path == "zoo.callbacks.ema.EMAWeights"]
        if row.method in ("bootstrap", "timevae"):
            assert not emas, row
        elif row.dataset == ETTH:
            assert [(e.decay, e.every_n_steps, e.schedule) for e in emas] == [(0.995, 10, "ema_pytorch")], row
        else:
            assert [(e.decay, e.every_n_steps, e.schedule) for e in emas] == [(0.9999, 1, "litema")], row


def test_spec_domains_match_the_recipes_and_unseen_stay_unseen():
    assert PRETRAIN == tuple(PRETRAIN_DOMAINS) and UNSEEN == tuple(UNSEEN_DOMAINS)
    assert not set(PRETRAIN) & set(UNSEEN)


def test_speed_bench_prints_a_row_per_model_and_writes_its_record(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the record goes to runs/bench/timemode-speed/ under the working directory
    assert bench.main(["--lengths", "8", "--batch", "4", "--steps", "1", "--samples", "4", "--sample-steps", "2"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 5 and lines[2].startswith("| 8 | timemode |") and lines[3].startswith("| 8 | dense |")
    assert lines[4].startswith("wrote runs/bench/timemode-speed/") and len(list(tmp_path.rglob("*.json"))) == 1
    small = ["--lengths", "8", "--batch", "4", "--steps", "1", "--samples", "4", "--sample-steps", "2"]
    assert bench.main([*small, "--channels", "3", "--unconditional"]) == 0
    assert len(capsys.readouterr().out.strip().splitlines()) == 5


def test_a_missing_ts_corpus_says_where_each_folder_comes_from(tmp_path, monkeypatch):
    """The not-found text is composed as "Source: <url>." (and "fetch it again from <url>"): ts-corpus's url names
    a place, the docs section that lists the upstream repository of every folder its recipes read."""
    monkeypatch.setenv("ZOO_DATA_MIRROR", "")
    monkeypatch.setenv("ZOO_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("ZOO_CACHE_DIR", str(tmp_path / "cache"))
    discover()  # registers the task catalogues
    with pytest.raises(DatasetNotFoundError) as info:
        resolve("ts-corpus")
    message = str(info.value)
    assert "assembled from" not in message
    assert "the upstream repositories listed in docs/tasks/timemode.md, section 'The ts-corpus folders'" in message
    docs = (REPO / "docs" / "tasks" / "timemode.md").read_text()
    section = docs.split("## The ts-corpus folders", 1)[1].split("\n## ", 1)[0]
    sources = [s for s in {**PRETRAIN_DOMAINS, **UNSEEN_DOMAINS}.values() if s.dataset == "ts-corpus"]
    folders = {f.split("/")[0] for s in sources for f in s.files}
    assert folders and all(f"`{folder}/`" in section for folder in folders), folders
