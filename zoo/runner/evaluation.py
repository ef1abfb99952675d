"""Evaluation runs (``zoo evaluate``): a config run with the benchmark protocol, every seed (times every fold), each
run fitted then tested into ``<base>/seed<S>[__fold<F>]/`` with its ``result.json``, then mean ± std of each test
metric into ``<base>/summary.json``. Resumable: a finished run (its ``result.json``) is skipped, a killed one
resumes from its ``last.ckpt``, a run another process holds (``run.lock``) is left to it."""

from __future__ import annotations

import hashlib
import json
import math
import os
import statistics
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

from zoo.cli.fit_test import fit_and_test
from zoo.cli.run_dir import run_key, shown
from zoo.errors import ConfigError
from zoo.leaderboard.versions import run_versions
from zoo.runinfo import git_commit, machine
from zoo.runner.run_lock import RunLock

RESULT = "result.json"
SUMMARY = "summary.json"
DEFAULT_SEEDS = (0, 1, 2)


def data_init_args(configs: list[str], overrides: list[str]) -> dict[str, Any]:
    """The datamodule's init args as ``zoo fit`` would parse them (defaults included), building nothing."""
    from zoo.cli.lightning_cli import ZooCLI

    class _ParseOnly(ZooCLI):
        def _set_seed(self) -> None:
            pass

        def instantiate_classes(self) -> None:
            pass

    args = [a for c in configs for a in ("--config", c)] + overrides
    argv, sys.argv = sys.argv, sys.argv[:1]
    try:
        cli = _ParseOnly(args=args, run=False)
    finally:
        sys.argv = argv
    data = cli.config.get("data")
    init_args = data.get("init_args") if hasattr(data, "get") else None
    return init_args.as_dict() if hasattr(init_args, "as_dict") else dict(init_args or {})


def protocol(
    configs: list[str], seeds: list[int], folds: int | None, overrides: list[str]
) -> list[tuple[int, int | None]]:
    """The (seed, fold) runs: seeds × folds when the data has folds (or ``folds``, ``--folds``), else one per seed.
    Appends ``--data.init_args.num_folds`` to ``overrides`` when ``folds`` differs from the config's."""
    data = data_init_args(configs, overrides)
    if folds is None and "fold" in data and isinstance(data.get("num_folds"), int):
        folds = data["num_folds"]
    if folds is not None:
        if "fold" not in data:
            raise ConfigError(f"--folds {folds}: this config's datamodule has no `fold` init arg to set")
        if folds < 1:
            raise ConfigError(f"--folds {folds}: must be at least 1")
        if "num_folds" in data and data["num_folds"] != folds:
            overrides += ["--data.init_args.num_folds", str(folds)]
    fold_list: list[int | None] = list(range(folds)) if folds else [None]
    return [(seed, fold) for seed in dict.fromkeys(seeds) for fold in fold_list]


def evaluation_name(configs: list[str], overrides: list[str]) -> str:
    """``<task>-<config>`` plus a short hash of the other options and of the config files' contents: another
    dataset path, or an edited config, is another evaluation (its finished runs are not reused)."""
    name = run_key(configs).replace("/", "-")
    digest = hashlib.sha256("\0".join(overrides).encode())
    for config in configs:
        try:
            digest.update(b"\0" + Path(config).read_bytes())
        except OSError:
            pass  # a missing config is reported by the first run, in one line
    return f"{name}-{digest.hexdigest()[:8]}"


def check_same_data(results: list[dict], base: Path) -> None:
    """Refuse to average runs that read different data (the user's file changed between two sessions)."""
    seen = {}
    for result in results:
        hashes = (result.get("extra") or {}).get("data_sha256")
        if hashes:
            seen.setdefault(json.dumps(hashes, sort_keys=True), run_name(result["seed"], result["fold"]))
    if len(seen) > 1:
        first, other = list(seen.values())[:2]
        raise ConfigError(
            f"{shown(base)}: runs {first} and {other} read different data (sha256 differ): the dataset changed "
            f"since the first runs; delete {shown(base)} or pass --name to evaluate the new data separately"
        )


def run_name(seed: int, fold: int | None) -> str:
    """The folder name of one run: ``seed<S>[__fold<F>]``."""
    return f"seed{seed}" + (f"__fold{fold}" if fold is not None else "")


def _write_json(path: Path, data: dict) -> None:
    """Written whole or not at all: a killed process never leaves half a result behind."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=1, default=str) + "\n")
    tmp.replace(path)


def _read_result(run_dir: Path) -> dict | None:
    try:
        return json.loads((run_dir / RESULT).read_text())
    except (OSError, ValueError):
        return None


def evaluate_one(args: list[str], seed: int, fold: int | None, run_dir: Path) -> dict:
    """Fit then test one (seed, fold) with ``zoo reproduce``'s machinery; its result (written to ``result.json``)."""
    run_args = [*args, "--seed_everything", str(seed)]
    if fold is not None:
        run_args += ["--data.init_args.fold", str(fold)]
    result = fit_and_test(run_args, run_dir)
    record = {
        "seed": seed,
        "fold": fold,
        **asdict(result),
        "commit": git_commit(),
        "versions": run_versions(),
        "machine": machine(),
    }
    _write_json(run_dir / RESULT, record)
    return record


def metric_stats(results: list[dict]) -> dict[str, dict[str, float]]:
    """Per test metric: mean, sample std (0 for one run) and n over the finite values."""
    names = sorted({k for r in results for k in r.get("metrics", {})})
    stats = {}
    for name in names:
        values = [r["metrics"][name] for r in results if not math.isnan(r["metrics"].get(name, math.nan))]
        if values:
            std = statistics.stdev(values) if len(values) > 1 else 0.0
            stats[name] = {"mean": statistics.fmean(values), "std": std, "n": len(values)}
    return stats


def summary_lines(stats: dict[str, dict[str, float]], total: int) -> list[str]:
    """One line per test metric: mean ± std and how many of the ``total`` runs gave it."""
    lines = []
    for name, s in stats.items():
        lines.append(f"  {name:<28} {s['mean']:.4g} ± {s['std']:.2g}  (n={s['n']} of {total})")
    return lines or ["  no test metrics (does the task define a test split?)"]


def run_state(run_dir: Path) -> str:
    """What a dry run says of one run's folder: done, running elsewhere, resumes from last.ckpt, or ""."""
    state = "done" if _read_result(run_dir) else ""
    if not state and RunLock(run_dir).held_elsewhere():
        state = "running elsewhere"
    elif not state and (run_dir / "checkpoints" / "last.ckpt").exists():
        state = "resumes from last.ckpt"
    return state


def list_runs(base: Path, runs: list[tuple[int, int | None]]) -> None:
    """``--dry-run``: every run of the evaluation and the state of its folder."""
    for seed, fold in runs:
        state = run_state(base / run_name(seed, fold))
        print(f"  {run_name(seed, fold)}" + (f"  ({state})" if state else ""))


def run_all(args: list[str], runs: list[tuple[int, int | None]], base: Path) -> tuple[list[dict], list[str]]:
    """Fit and test every (seed, fold) of ``runs`` not done before, one after the other; the results of the finished
    runs, and the names of those another process holds (left to it)."""
    results, pending = [], []
    for i, (seed, fold) in enumerate(runs, 1):
        key = run_name(seed, fold)
        run_dir = base / key
        done = _read_result(run_dir)
        if done is not None:
            print(f"[{i}/{len(runs)}] {key}: done before: {done['metrics']}", flush=True)
            results.append(done)
            continue
        lock = RunLock(run_dir)
        if not lock.acquire():
            print(f"[{i}/{len(runs)}] {key}: skipped, another process runs it ({lock.holder()})", flush=True)
            pending.append(key)
            continue
        try:
            done = _read_result(run_dir)  # finished by another process since we looked
            if done is None:
                print(f"[{i}/{len(runs)}] {key}", flush=True)
                done = evaluate_one(args, seed, fold, run_dir)
        finally:
            lock.release()
        print(f"  {done['metrics']}  ({done['wall_time_s']:.1f} s, {done['tested']} checkpoint)", flush=True)
        results.append(done)
    return results, pending


def write_summary(
    configs: list[str],
    overrides: list[str],
    seeds: list[int],
    folds: int | None,
    results: list[dict],
    pending: list[str],
    base: Path,
) -> dict[str, dict[str, float]]:
    """Write ``<base>/summary.json`` (each run's metrics, the runs left pending, mean ± std per test metric and the
    data's sha256; ``folds``: how many folds the protocol has, None without) after checking every run read the same
    data; the per-metric statistics."""
    check_same_data(results, base)
    stats = metric_stats(results)
    summary = {
        "configs": configs,
        "overrides": overrides,
        "seeds": list(dict.fromkeys(seeds)),
        "folds": folds,
        "runs": {run_name(r["seed"], r["fold"]): r["metrics"] for r in results},
        "pending": pending,
        "metrics": stats,
        "data_sha256": next((r["extra"]["data_sha256"] for r in results if "data_sha256" in r.get("extra", {})), {}),
    }
    _write_json(base / SUMMARY, summary)
    return stats
