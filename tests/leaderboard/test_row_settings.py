"""A record carries its row's settings hash (config file contents + overrides); a changed row makes it stale."""

from __future__ import annotations

import dataclasses

from zoo_testing import make_record

from zoo.code_closure import source_hash
from zoo.leaderboard.render import render_task
from zoo.leaderboard.settings import SETTINGS_KEY, row_args, settings_changed, settings_fingerprint
from zoo.registry import get_task


def test_the_fingerprint_follows_config_contents_and_overrides_not_paths(tmp_path):
    a, b, c = tmp_path / "a.yaml", tmp_path / "b" / "a.yaml", tmp_path / "c.yaml"
    b.parent.mkdir()
    a.write_text("model: {lr: 0.1}\n")
    b.write_text("model: {lr: 0.1}\n")
    c.write_text("model: {lr: 0.2}\n")
    base = settings_fingerprint(["--config", str(a), "--seed_everything", "0"])
    assert settings_fingerprint(["--config", str(b), "--seed_everything", "0"]) == base  # another checkout
    assert settings_fingerprint(["--config", str(c), "--seed_everything", "0"]) != base  # the config changed
    assert settings_fingerprint(["--config", str(a), "--seed_everything", "1"]) != base  # an override changed


def test_a_record_of_other_row_settings_is_stale_and_marked(tmp_path):
    spec = get_task("c2gmoe")
    row = next(r for r in spec.benchmark if r.dataset == "Cora" and r.method == "gcn")
    now = settings_fingerprint(row_args(spec, row, 0, None, quick=False))

    def rec(settings, seed=0):
        extra = {SETTINGS_KEY: settings} if settings else {}
        return make_record(
            "c2gmoe", "gcn", "Cora", {"test/acc": 0.8}, seed=seed, extra=extra, source_hash=source_hash({})
        )

    assert not settings_changed(spec, rec(now)) and not settings_changed(spec, rec(None))  # none: nothing to compare
    assert settings_changed(spec, rec("0" * 64))
    moved = dataclasses.replace(row, overrides=(*row.overrides, "--trainer.max_epochs", "3"))
    changed_spec = dataclasses.replace(spec, benchmark=(moved,))
    assert settings_changed(changed_spec, rec(now))  # the row's overrides changed since the record
    page = render_task(spec, [rec(now), rec("0" * 64, seed=1)], leaderboard_dir=tmp_path)
    assert "| Cora | 0.800 ± 0.000 (n=2) ° |" in page
    assert "° also: 1 of 2 records ran with other settings than their rows declare now" in page


def test_a_record_from_before_the_hash_is_compared_through_its_resolved_config():
    spec = get_task("dygmoce")
    row = next(r for r in spec.benchmark if r.method == "twin")
    args = row_args(spec, row, 0, None, quick=False)
    stride = args.index("--data.init_args.train_stride") + 1
    config = {
        "seed_everything": 0,
        "trainer": {"max_epochs": int(args[args.index("--trainer.max_epochs") + 1]), "limit_val_batches": 10},
        "data": {"init_args": {"train_stride": int(args[stride])}},
        "model": {"init_args": {"channel_dim": 16, "lr": 1e-3}},
    }

    def rec(config):
        return make_record("dygmoce", "twin", "UCI", {"test/ap": 0.9}, config=config, source_hash=source_hash({}))

    assert not settings_changed(spec, rec(config))  # every override matches (numbers compared as numbers)
    assert not settings_changed(spec, rec({"data": {}}))  # keys the record lacks say nothing
    older = {**config, "data": {"init_args": {"train_stride": int(args[stride]) + 2}}}
    assert settings_changed(spec, rec(older))  # the row trains on other batches now
