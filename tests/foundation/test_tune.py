"""`zoo tune` (issue 26): an Optuna study on the validation metric only, over the space the task declares, that
resumes and reports its choice; spaces as data; router knobs merged into one router_kwargs override."""

import json

import pytest
from zoo_testing import run_zoo

from zoo.tuning.router_knobs import router_space
from zoo.tuning.space import Choice, Float, Int, as_overrides, check_space, describe


def test_overrides_merge_router_knobs_and_spell_values():
    params = {
        "model.init_args.lr": 0.01,
        "model.init_args.batch_norm": True,
        "model.init_args.router_kwargs.tau": 0.5,
        "model.init_args.router_kwargs.prior_concentration": 2.0,
    }
    assert as_overrides(params) == [
        "--model.init_args.lr=0.01",
        "--model.init_args.batch_norm=true",
        '--model.init_args.router_kwargs={"tau": 0.5, "prior_concentration": 2.0}',
    ]
    assert set(router_space("dirichlet", "model.init_args")) == {
        "model.init_args.router_kwargs.tau",
        "model.init_args.router_kwargs.prior_concentration",
    }
    assert router_space("topk", "model.init_args") == {}


def test_spaces_are_checked_and_described():
    space = {"model.init_args.lr": Float(1e-4, 1e-2, log=True), "model.init_args.hidden": Choice((32, 64))}
    check_space(space, "t")
    assert describe(space) == "lr 0.0001–0.01 (log), hidden {32, 64}"
    assert describe({"data.init_args.k": Int(1, 4)}) == "k 1–4"
    with pytest.raises(ValueError, match="config key"):
        check_space({"--lr": Float(0, 1)}, "t")
    with pytest.raises(ValueError, match="Float, Int or Choice"):
        check_space({"model.init_args.lr": (0, 1)}, "t")


def _trial_dirs(folder):
    return sorted(p.name for p in folder.glob("trial*"))


@pytest.mark.slow(reason="tunes the toy task in zoo processes: 4 studies")
def test_zoo_tune_searches_on_validation_resumes_and_never_tests(zoo_env, tmp_path):
    runs = tmp_path / "runs"
    base = ["tune", "toy", "--row", "moe/digits", "--runs", str(runs), "--trainer.max_epochs=2"]
    first = run_zoo([*base, "--trials", "2"], zoo_env, tmp_path)
    assert first.returncode == 0, first.stderr[-3000:]
    assert "best val/acc" in first.stdout and "over 2 trials" in first.stdout
    folder = runs / "tune" / "toy" / "moe__digits"
    best = json.loads((folder / "best.json").read_text())
    assert best["metric"] == "val/acc" and best["direction"] == "maximize" and best["trials"] == 2
    assert set(best["params"]) == {"model.init_args.lr", "model.init_args.hidden"}
    assert best["value"] == max(v for v in best["trial_values"] if v is not None)
    assert _trial_dirs(folder) == ["trial0", "trial1"]
    assert not list(folder.rglob("*.ckpt"))  # trial checkpoints are not kept
    # no trial ever ran the test loop
    for summary in folder.rglob("run_fit.json"):
        assert "test/" not in summary.read_text()

    again = run_zoo([*base, "--trials", "2"], zoo_env, tmp_path)  # done: read back, nothing re-run
    assert again.returncode == 0 and _trial_dirs(folder) == ["trial0", "trial1"]
    more = run_zoo([*base, "--trials", "3"], zoo_env, tmp_path)  # a larger budget resumes the same study
    assert more.returncode == 0, more.stderr[-3000:]
    assert _trial_dirs(folder) == ["trial0", "trial1", "trial2"]
    assert json.loads((folder / "best.json").read_text())["trials"] == 3
    other = run_zoo([*base[:-1], "--trainer.max_epochs=1", "--trials", "1"], zoo_env, tmp_path)
    assert other.returncode == 0, other.stderr[-3000:]  # other settings: the old study is set aside, not read back
    assert "ran other code or settings; moved to" in other.stdout and _trial_dirs(folder) == ["trial0"]
    assert json.loads((folder / "best.json").read_text())["trials"] == 1
    assert _trial_dirs(folder.with_name("moe__digits.replaced-0")) == ["trial0", "trial1", "trial2"]


@pytest.mark.slow(reason="a tuning trial and 3 refusals, each a zoo process")
def test_zoo_tune_router_knobs_and_errors(zoo_env, tmp_path):
    runs = tmp_path / "runs"
    base = ["tune", "toy", "--runs", str(runs), "--trainer.max_epochs=1"]
    knobs = run_zoo([*base, "--row", "moe/digits", "--router", "noisy_topk", "--trials", "1"], zoo_env, tmp_path)
    assert knobs.returncode == 0, knobs.stderr[-3000:]
    best = json.loads((runs / "tune" / "toy" / "moe__digits__noisy_topk" / "best.json").read_text())
    assert "model.init_args.router_kwargs.noise_eps" in best["params"]
    for args, message in (
        (["--row", "nope"], "matches 0 rows of toy"),
        (["--row", "digits"], "matches 2 rows of toy"),
        (["--row", "moe/digits", "--router", "nope"], "unknown router 'nope'"),
        (["--row", "moe/digits", "--trials", "0"], "must be at least 1"),
    ):
        bad = run_zoo([*base, *args], zoo_env, tmp_path)
        assert bad.returncode != 0 and message in bad.stderr and "Traceback" not in bad.stderr


@pytest.mark.slow(reason="tunes then fits a row in a subprocess")
def test_a_row_that_asks_for_tuning_is_tuned_then_run_with_the_chosen_values(zoo_env, tmp_path):
    """BenchmarkRow.tune_trials: zoo reproduce tunes the row on validation first; the record says how."""
    import subprocess
    import sys

    script = f"""
import dataclasses, json
from pathlib import Path
from zoo.runner.reproduce import run_one
from zoo.registry import get_task
spec = get_task("toy")
row = dataclasses.replace(spec.benchmark[0], tune_trials=2, overrides=("--trainer.max_epochs=1",))
rec = run_one(spec, row, 0, None, False, Path({str(tmp_path)!r}) / "runs" / "reproduce" / "toy" / "moe__digits__seed0")
print(json.dumps({{"tuning": rec.extra["tuning"], "lr": rec.config["model"]["init_args"]["lr"]}}))
"""
    out = subprocess.run([sys.executable, "-c", script], env=zoo_env, cwd=tmp_path, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["tuning"]["trials"] == 2 and result["lr"] == result["tuning"]["params"]["model.init_args.lr"]
    assert len(result["tuning"]["trial_wall_s"]) == 2 and min(result["tuning"]["trial_wall_s"]) > 0
    assert (tmp_path / "runs" / "tune" / "toy" / "moe__digits" / "best.json").is_file()
