"""Issue 61 item 6: a benchmark row trained expert-parallel, recorded beside its one-process records.

- each record under ``leaderboard/results/expert_parallel/`` is its reference row's config (same seed, fold, model,
  data, epochs) fitted at world 2 with ``ExpertParallelStrategy`` and half the batch per process, so the global
  batch is the reference's, with full provenance;
- no task page reads these records;
- ``leaderboard/expert_parallel.md`` is what ``zoo.distributed.page`` renders from them, and its verdicts follow
  the comparison rule in the metric's direction;
- ``zoo.distributed.row_run`` fits the reference's config at world P with the batch split P ways, or refuses, and
  uses a finished fit again only when today's code and settings made it.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from zoo.distributed import page, row_run
from zoo.distributed.row_run import FOLDER, STRATEGY, fit_arguments, method_name, per_process_batch
from zoo.leaderboard.record import RunRecord, read_records, write_record_file
from zoo.registry import discover, repository_root

REPO = repository_root()
RECORDS = read_records(FOLDER)
# what the expert-parallel fit sets on the reference's config, and nothing else
WORLD_KEYS = {"default_root_dir", "devices", "accelerator", "strategy", "num_nodes", "enable_progress_bar"}


@pytest.mark.parametrize("record", RECORDS, ids=lambda r: r.key())
def test_each_record_is_its_reference_row_at_world_2_on_the_same_global_batch(record):
    reference = page.reference_of(record, REPO)
    assert (record.seed, record.fold, record.dataset) == (reference.seed, reference.fold, reference.dataset)
    assert record.method == method_name(reference.method, 2)
    ours, theirs = record.config, reference.config
    trainer = ours["trainer"]
    assert str(trainer["devices"]) == "2" and trainer["strategy"]["class_path"] == STRATEGY
    assert trainer["strategy"]["init_args"]["ep_size"] == 2
    assert 2 * ours["data"]["init_args"]["batch_size"] == theirs["data"]["init_args"]["batch_size"]
    assert ours["model"] == theirs["model"] and ours["seed_everything"] == theirs["seed_everything"]
    assert {k: v for k, v in ours["data"]["init_args"].items() if k != "batch_size"} == {
        k: v for k, v in theirs["data"]["init_args"].items() if k != "batch_size"
    }
    assert {k: v for k, v in trainer.items() if k not in WORLD_KEYS} == {
        k: v for k, v in theirs["trainer"].items() if k not in WORLD_KEYS
    }
    assert record.commit and record.versions and record.source_hash and record.wall_time_s > 0
    assert record.machine.get("cpu") and record.extra["expert_parallel"]["world_size"] == 2
    assert set(record.metrics) == set(reference.metrics)


def test_there_are_at_least_three_runs_for_the_rule_to_judge():
    assert len(RECORDS) >= 3


def test_no_task_page_reads_the_expert_parallel_records():
    tasks = {load.name for load in discover()}
    assert FOLDER not in tasks and page.MATRIX_TASK != FOLDER  # pages read results/<task>/ and results/router_matrix/
    assert all(r.task == FOLDER and "@ep" in r.method for r in RECORDS)


def test_the_page_is_what_the_records_give():
    assert (REPO / "leaderboard" / page.PAGE).read_text() == page.render(REPO)


def _reference(seed: int, mse: float) -> RunRecord:
    config = {"data": {"init_args": {"batch_size": 64}}, "trainer": {}, "model": {}, "seed_everything": seed}
    return RunRecord(
        task=page.MATRIX_TASK,
        method="noisy_topk",
        dataset="seer",
        metrics={"test/mse": mse, "test/mae": mse},
        seed=seed,
        config=config,
        versions={},
        wall_time_s=100.0,
        commit="0" * 40,
        machine={"cpu": "AMD EPYC", "cores": 2, "torch_threads": 1},
    )


def _world_2(reference: RunRecord, path: str, mse: float) -> RunRecord:
    ep = {
        **{"world_size": 2, "ep_size": 2, "per_process_batch": 32, "global_batch": 64},
        **{"fit_wall_time_s": 90.0, "test_wall_time_s": 10.0, "load_average_1min_at_start": 1.0},
    }
    extra = {"expert_parallel": ep, "reference": {"record": path}}
    return replace(
        reference, task=FOLDER, method="noisy_topk@ep2", metrics={"test/mse": mse, "test/mae": mse}, extra=extra
    )


@pytest.mark.parametrize(
    "shift, verdict",
    [(0.0, "tie ="), (0.01, "worse ✗"), (-0.01, "better ✓")],
    ids=["equal", "higher error", "lower error"],
)
def test_the_verdict_reads_the_metric_direction(tmp_path, shift, verdict):
    """test/mse is lower-is-better: a world-2 side with a higher error is worse, not better."""
    for seed, mse in enumerate((0.374, 0.373, 0.376)):
        reference = _reference(seed, mse)
        path = f"leaderboard/results/{page.MATRIX_TASK}/{reference.key()}.json"
        write_record_file(reference, tmp_path / path)
        ours = _world_2(reference, path, mse + shift + 0.001 * (seed == 1) * (shift != 0))
        write_record_file(ours, tmp_path / "leaderboard" / "results" / FOLDER / f"{ours.key()}.json")
    text = page.render(tmp_path)
    line = next(x for x in text.splitlines() if x.startswith("| test/mse"))
    assert line.endswith(f"| {verdict} |"), line


def test_the_fit_runs_the_reference_config_at_world_p_with_its_batch_split(tmp_path):
    config = {"data": {"init_args": {"batch_size": 64}}}
    args = fit_arguments(tmp_path / "c.yaml", tmp_path / "run", 2, per_process_batch(config, 2))
    flags = dict(zip(args[1::2], args[2::2]))
    assert args[0] == "fit" and flags["--config"] == str(tmp_path / "c.yaml")
    assert flags["--trainer.devices"] == "2" and flags["--trainer.strategy"] == STRATEGY
    assert flags["--trainer.strategy.ep_size"] == "2" and flags["--data.init_args.batch_size"] == "32"


def test_a_batch_that_does_not_split_is_refused():
    with pytest.raises(SystemExit, match="batch 63 does not split over 2 processes"):
        per_process_batch({"data": {"init_args": {"batch_size": 63}}}, 2)


def _fake_zoo_fit(calls: list):
    """Stands in for the ``zoo fit`` subprocess: records the call and leaves what a finished fit leaves."""

    def run(args, env, stdout, stderr):
        calls.append(args)
        root = Path(args[args.index("--trainer.default_root_dir") + 1])
        (root / "lightning_logs" / "version_0").mkdir(parents=True)
        (root / "lightning_logs" / "version_0" / "config.yaml").write_text("{}\n")
        return subprocess.CompletedProcess(args, 0)

    return run


def test_a_finished_fit_is_used_again_only_when_the_same_code_and_settings_made_it(tmp_path, monkeypatch):
    """A fit.json from other code (or settings) or a killed fit's folder is moved aside and fitted afresh; a fit
    that today's code and settings finished is not fitted again."""
    calls: list = []
    monkeypatch.setattr(row_run.subprocess, "run", _fake_zoo_fit(calls))
    reference, run_dir = _reference(0, 0.37), tmp_path / "noisy_topk-ep2__seer__seed0"
    row_run.fit(reference, run_dir, 2, 1)
    row_run.fit(reference, run_dir, 2, 1)
    assert len(calls) == 1  # finished by the same code and settings: used again

    info = json.loads((run_dir / "fit.json").read_text())
    info["made_by"]["source_hash"] = "other code"
    (run_dir / "fit.json").write_text(json.dumps(info))
    row_run.fit(reference, run_dir, 2, 1)
    assert len(calls) == 2 and (tmp_path / "noisy_topk-ep2__seer__seed0.replaced-0" / "fit.json").exists()

    (run_dir / "fit.json").unlink()  # a fit killed before it finished
    row_run.fit(reference, run_dir, 2, 1)
    assert len(calls) == 3 and (tmp_path / "noisy_topk-ep2__seer__seed0.replaced-1" / "fit").is_dir()

    other_batch = replace(reference, config={**reference.config, "data": {"init_args": {"batch_size": 32}}})
    row_run.fit(other_batch, run_dir, 2, 1)
    assert len(calls) == 4  # other settings: fitted again
