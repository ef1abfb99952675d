"""``zoo evaluate --config C [--seeds 0 1 2] [--folds K] [--key value ...]``: a config (typically a task's default
with ``--data.init_args.path`` pointing at the user's dataset) run with the benchmark protocol: every seed, and
every fold when ``--folds`` is given or the datamodule has ``num_folds`` (``--data.init_args.fold`` set to each, as
``zoo reproduce`` does); each run fits then tests (the best checkpoint when the model names a monitor, else the
last weights). Prints mean ± std of each test metric and writes ``summary.json`` beside the runs, all under
``runs/evaluate/<name>/``, never ``leaderboard/``. Resumable: a finished run (its ``result.json``) is skipped, a
killed one resumes from its ``last.ckpt``, a run another process holds (``run.lock``) is left to it."""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import statistics
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

from zoo.cli.run_dir import run_key, shown
from zoo.cli.run_lock import RunLock
from zoo.errors import ConfigError

RESULT = "result.json"
SUMMARY = "summary.json"
DEFAULT_SEEDS = (0, 1, 2)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="zoo evaluate",
        description=__doc__,
        allow_abbrev=False,
        epilog="Every other option (--data.init_args.path FILE, --trainer.max_epochs N, ...) goes to each run.",
    )
    p.add_argument("--config", action="append", required=True, help="LightningCLI config (repeatable)")
    p.add_argument("--seeds", type=int, nargs="+", default=list(DEFAULT_SEEDS), help="default: 0 1 2")
    p.add_argument("--folds", type=int, default=None, help="k folds (default: the datamodule's num_folds, if any)")
    p.add_argument("--name", default=None, help="folder name under runs/evaluate/ (default: from config + options)")
    p.add_argument("--runs", type=Path, default=Path("runs"), help="root of run folders (default: ./runs)")
    p.add_argument("--dry-run", action="store_true", help="list the runs and their state, run nothing")
    return p


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


def protocol(ns: argparse.Namespace, overrides: list[str]) -> list[tuple[int, int | None]]:
    """The (seed, fold) runs: seeds × folds when the data has folds (or ``--folds``), else one per seed."""
    data = data_init_args(ns.config, overrides)
    folds = ns.folds
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
    return [(seed, fold) for seed in dict.fromkeys(ns.seeds) for fold in fold_list]


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
    from zoo.cli.fit_test import fit_and_test
    from zoo.leaderboard.versions import run_versions
    from zoo.runinfo import git_commit, machine

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
    lines = []
    for name, s in stats.items():
        lines.append(f"  {name:<28} {s['mean']:.4g} ± {s['std']:.2g}  (n={s['n']} of {total})")
    return lines or ["  no test metrics (does the task define a test split?)"]


def evaluate_main(argv: list[str]) -> int:
    from zoo.cli.main import expand_task_shortcut

    ns, overrides = _parser().parse_known_args(expand_task_shortcut(argv))
    unknown = [a for a in overrides if a.startswith("-") and not a.startswith("--")]
    if unknown:
        raise ConfigError(f"zoo evaluate: unknown option {unknown[0]}; run `zoo evaluate --help`")
    overrides = list(overrides)
    runs = protocol(ns, overrides)
    name = ns.name or evaluation_name(ns.config, overrides)
    base = ns.runs / "evaluate" / name
    args = [a for c in ns.config for a in ("--config", c)] + overrides
    folds = sorted({f for _, f in runs if f is not None})
    what = f"{len(runs)} runs ({len({s for s, _ in runs})} seeds" + (f" × {len(folds)} folds)" if folds else ")")
    print(f"zoo evaluate: {what} in {shown(base)}", flush=True)
    if ns.dry_run:
        for seed, fold in runs:
            run_dir = base / run_name(seed, fold)
            state = "done" if _read_result(run_dir) else ""
            if not state and RunLock(run_dir).held_elsewhere():
                state = "running elsewhere"
            elif not state and (run_dir / "checkpoints" / "last.ckpt").exists():
                state = "resumes from last.ckpt"
            print(f"  {run_name(seed, fold)}" + (f"  ({state})" if state else ""))
        return 0
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
    check_same_data(results, base)
    stats = metric_stats(results)
    summary = {
        "configs": ns.config,
        "overrides": overrides,
        "seeds": list(dict.fromkeys(ns.seeds)),
        "folds": len(folds) or None,
        "runs": {run_name(r["seed"], r["fold"]): r["metrics"] for r in results},
        "pending": pending,
        "metrics": stats,
        "data_sha256": next((r["extra"]["data_sha256"] for r in results if "data_sha256" in r.get("extra", {})), {}),
    }
    _write_json(base / SUMMARY, summary)
    print(f"zoo evaluate: {len(results)} of {len(runs)} runs finished; test metrics, mean ± std:")
    print("\n".join(summary_lines(stats, len(runs))))
    print(f"  summary: {shown(base / SUMMARY)}", flush=True)
    failed = any(not r["metrics"] for r in results)
    return 1 if pending or failed or not results else 0
