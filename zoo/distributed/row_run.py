"""A benchmark row's run trained expert-parallel: the row's one-process record's config fitted by ``zoo fit`` at
world P (``ExpertParallelStrategy``, ``ep_size`` P, each process 1/P of the record's batch, so the global
batch is the record's), then tested at world 1 with the record's own config on the checkpoint the record's
protocol tests (the best one when the model names a monitor, else the last), and written as a record of its own.

    python -m zoo.distributed.row_run --reference leaderboard/results/router_matrix/noisy_topk__seer__seed0.json \\
        --world 2 --leaderboard

The record goes to ``leaderboard/results/expert_parallel/`` (``--leaderboard``; else ``runs/expert_parallel/
records/``), method ``<reference method>@ep<P>``, same dataset, seed and fold as the reference, so no task page
reads it; ``leaderboard/expert_parallel.md`` (``zoo.distributed.page``) sets it beside the reference. Testing at
world 1 keeps the test protocol the reference's: Lightning's distributed sampler pads a test set to equal shards,
which would count a few windows twice. A finished fit (``fit.json`` in its run folder) is not fitted again when
the code and settings that made it are today's (``fit_made_by``); a fit by other code, or one that was killed
before it finished, is moved aside (``zoo.runner.run_folder.move_aside``) and fitted afresh.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import yaml

from zoo.leaderboard.record import RunRecord, read_record, record_path, write_record_file

STRATEGY = "zoo.distributed.ExpertParallelStrategy"
FOLDER = "expert_parallel"  # leaderboard/results/<FOLDER>: read by no task page


def method_name(method: str, world: int) -> str:
    """``noisy_topk`` at world 2 -> ``noisy_topk@ep2``: the reference's method, marked expert-parallel."""
    return f"{method}@ep{world}"


def fit_arguments(config: Path, run_dir: Path, world: int, batch: int) -> list[str]:
    """``zoo fit`` of ``config`` at ``world`` processes, every expert spread over all of them, ``batch`` each."""
    return [
        *("fit", "--config", str(config), "--trainer.default_root_dir", str(run_dir)),
        *("--trainer.accelerator", "cpu", "--trainer.devices", str(world), "--trainer.num_nodes", "1"),
        *("--trainer.strategy", STRATEGY, "--trainer.strategy.ep_size", str(world)),
        *("--data.init_args.batch_size", str(batch), "--trainer.enable_progress_bar", "false"),
    ]


def per_process_batch(config: dict, world: int) -> int:
    """The record's batch split over ``world`` processes; refused when it does not split evenly."""
    batch = int(config["data"]["init_args"]["batch_size"])
    if batch % world:
        raise SystemExit(f"row_run: the reference's batch {batch} does not split over {world} processes")
    return batch // world


def fit_made_by(reference: RunRecord, world: int) -> dict[str, str]:
    """What a finished fit must have been made by to be used again: the source hash of the reference's code plus
    the expert-parallel strategy (``zoo.code_closure``), and a sha256 of the reference's config with the fit's
    arguments."""
    from zoo.code_closure import source_hash

    arguments = fit_arguments(Path("<config>"), Path("<run>"), world, per_process_batch(reference.config, world))
    settings = json.dumps([reference.config, arguments], sort_keys=True, default=str)
    return {
        "source_hash": source_hash({"configs": [reference.config], "strategy": {"class_path": STRATEGY}}),
        "settings": hashlib.sha256(settings.encode()).hexdigest(),
    }


def fit(reference: RunRecord, run_dir: Path, world: int, threads: int) -> dict:
    """Fit the reference's config at ``world`` processes into ``run_dir`` (skipped when ``fit.json`` says the
    same code and settings finished it); returns ``fit.json``: wall time, per-process batch, the fit's resolved
    config file, and what made it."""
    from zoo.runner.run_folder import move_aside

    made_by = fit_made_by(reference, world)
    done = run_dir / "fit.json"
    finished = json.loads(done.read_text()) if done.exists() else {}
    if finished.get("made_by") == made_by:
        return finished
    if run_dir.exists() and any(run_dir.iterdir()):
        moved = move_aside(run_dir)
        print(f"row_run: {run_dir} held a fit by other code or settings, or a killed one: moved to {moved}")
    run_dir.mkdir(parents=True, exist_ok=True)
    config = run_dir / "reference_config.yaml"
    config.write_text(yaml.safe_dump(reference.config, sort_keys=False))
    batch = per_process_batch(reference.config, world)
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "PYTHONUNBUFFERED": "1"}
    load = os.getloadavg()[0]
    start = time.perf_counter()
    args = [sys.executable, "-m", "zoo.cli.main", *fit_arguments(config, run_dir / "fit", world, batch)]
    with open(run_dir / "fit.log", "w") as log:
        code = subprocess.run(args, env=env, stdout=log, stderr=subprocess.STDOUT).returncode
    wall = time.perf_counter() - start
    if code:
        raise SystemExit(f"row_run: zoo fit at world {world} failed ({code}); see {run_dir / 'fit.log'}")
    saved = sorted((run_dir / "fit" / "lightning_logs").glob("version_*/config.yaml"))[-1]
    info = {"wall_time_s": round(wall, 2), "batch": batch, "config": str(saved), "load_average_1min": load}
    info["made_by"] = made_by
    done.write_text(json.dumps(info, indent=1) + "\n")
    return info


def tested_checkpoint(run_dir: Path, monitor: str | None) -> Path:
    """The checkpoint the reference's protocol tests (``zoo.cli.fit_test``): the best when the model names a
    monitor, else the last weights."""
    folder = run_dir / "fit" / "checkpoints"
    best = sorted(folder.glob("best-*.ckpt"))
    if monitor and len(best) != 1:
        raise SystemExit(f"row_run: expected one best checkpoint in {folder}, found {len(best)}")
    return best[0] if monitor else folder / "last.ckpt"


def test_at_world_1(reference: RunRecord, run_dir: Path) -> tuple[dict, dict, dict, float, str]:
    """Test the fitted checkpoint in this process with the reference's own config (its batch, one device):
    (test metrics, the model's extra results, routing summary, wall seconds, the checkpoint's name)."""
    from zoo.cli.fit_test import routing_summary
    from zoo.cli.lightning_cli import ZooCLI

    config = run_dir / "reference_config.yaml"
    args = ["--config", str(config), "--trainer.default_root_dir", str(run_dir / "test_world1")]
    args += ["--trainer.accelerator", "cpu", "--trainer.devices", "1", "--trainer.strategy", "auto"]
    start = time.perf_counter()
    argv, sys.argv = sys.argv, sys.argv[:1]
    try:
        cli = ZooCLI(args=args, run=False)
    finally:
        sys.argv = argv
    checkpoint = tested_checkpoint(run_dir, getattr(cli.model, "checkpoint_monitor", None))
    cli.trainer.test(cli.model, datamodule=cli.datamodule, ckpt_path=str(checkpoint), verbose=False, weights_only=True)
    metrics = {k: float(v) for k, v in cli.trainer.callback_metrics.items() if k.startswith("test/") and v.numel() == 1}
    extra = cli.model.extra_results() if hasattr(cli.model, "extra_results") else {}
    return metrics, extra, routing_summary(cli.trainer), time.perf_counter() - start, checkpoint.name


def fit_routing(fit_info: dict) -> dict:
    """The fit's routing summary (training and validation, merged over the processes by the routing-stats
    callback), or {}."""
    path = Path(fit_info["config"]).parent / "routing_summary.json"
    return json.loads(path.read_text()) if path.exists() else {}


def record_of_run(reference: RunRecord, reference_path: Path, run_dir: Path, world: int) -> RunRecord:
    """The expert-parallel run's record: its fit's resolved config, the world-1 test's metrics, and where it comes
    from (the reference record, world size, per-process batch, fit and test wall times)."""
    from zoo.code_closure import source_hash
    from zoo.leaderboard.cpu_identity import record_machine
    from zoo.leaderboard.versions import run_versions
    from zoo.runinfo import dirty_sources, git_commit

    fit_info = json.loads((run_dir / "fit.json").read_text())
    metrics, extra, routing, test_wall, checkpoint = test_at_world_1(reference, run_dir)
    config = yaml.safe_load(Path(fit_info["config"]).read_text())
    extra["expert_parallel"] = {
        "world_size": world,
        "ep_size": world,
        "per_process_batch": fit_info["batch"],
        "global_batch": fit_info["batch"] * world,
        "fit_wall_time_s": fit_info["wall_time_s"],
        "test_wall_time_s": round(test_wall, 2),
        "load_average_1min_at_start": fit_info["load_average_1min"],
        "tested": f"{checkpoint} at world 1 with the reference's config",
    }
    extra["reference"] = {
        "record": str(reference_path),
        "task": reference.task,
        "method": reference.method,
        "commit": reference.commit,
        "source_hash": reference.source_hash,
    }
    dirty = dirty_sources()
    if dirty:
        extra["dirty_files"] = dirty[:50]
    return RunRecord(
        task=FOLDER,
        method=method_name(reference.method, world),
        dataset=reference.dataset,
        metrics=metrics,
        seed=reference.seed,
        fold=reference.fold,
        config=config,
        versions=run_versions(),
        wall_time_s=round(fit_info["wall_time_s"] + test_wall, 2),
        commit=git_commit(),
        machine=record_machine(),
        reduced=reference.reduced,
        note=f"{reference.note}; trained at world {world} (ep_size {world}), tested at world 1".lstrip("; "),
        extra=extra,
        routing={**fit_routing(fit_info), **{k: v for k, v in routing.items() if k == "test"}},
        source_hash=source_hash(config),
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m zoo.distributed.row_run", description=__doc__.split("\n\n")[0])
    p.add_argument("--reference", type=Path, action="append", required=True, help="a one-process record (repeatable)")
    p.add_argument("--world", type=int, default=2, help="processes, all in one expert-parallel group (default 2)")
    p.add_argument("--threads", type=int, default=1, help="torch threads per process (default 1, as the records)")
    p.add_argument("--runs", type=Path, default=Path("runs") / FOLDER, help="run folders (runs/expert_parallel)")
    p.add_argument("--leaderboard", action="store_true", help="write the records into leaderboard/results/")
    ns = p.parse_args(argv)
    import torch

    torch.set_num_threads(ns.threads)
    for path in ns.reference:
        reference = read_record(path)
        key = replace(reference, method=method_name(reference.method, ns.world)).key()
        run_dir = ns.runs / key
        fit(reference, run_dir, ns.world, ns.threads)
        record = record_of_run(reference, path, run_dir, ns.world)
        out = record_path(FOLDER, key) if ns.leaderboard else ns.runs / "records" / f"{key}.json"
        write_record_file(record, out)
        print(f"row_run: {key}: {record.metrics} ({record.wall_time_s:.1f} s) -> {out}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
