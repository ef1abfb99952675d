"""``zoo evaluate --config C [--seeds 0 1 2] [--folds K] [--key value ...]``: a config (typically a task's default
with ``--data.init_args.path`` pointing at the user's dataset) run with the benchmark protocol: every seed, and
every fold when ``--folds`` is given or the datamodule has ``num_folds`` (``--data.init_args.fold`` set to each, as
``zoo reproduce`` does); each run fits then tests (the best checkpoint when the model names a monitor, else the
last weights). Prints mean ± std of each test metric and writes ``summary.json`` beside the runs, all under
``runs/evaluate/<name>/``, never ``leaderboard/``. Resumable: a finished run (its ``result.json``) is skipped, a
killed one resumes from its ``last.ckpt``, a run another process holds (``run.lock``) is left to it."""

from __future__ import annotations

import argparse
from pathlib import Path

from zoo.cli.run_dir import shown
from zoo.cli.task_shortcut import expand_task_shortcut
from zoo.errors import ConfigError
from zoo.runner.evaluation import (
    DEFAULT_SEEDS,
    SUMMARY,
    evaluation_name,
    list_runs,
    protocol,
    run_all,
    summary_lines,
    write_summary,
)


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


def evaluate_main(argv: list[str]) -> int:
    """``zoo evaluate ...``: parse, then run and summarise the evaluation (``zoo.runner.evaluation``)."""
    ns, overrides = _parser().parse_known_args(expand_task_shortcut(argv))
    unknown = [a for a in overrides if a.startswith("-") and not a.startswith("--")]
    if unknown:
        raise ConfigError(f"zoo evaluate: unknown option {unknown[0]}; run `zoo evaluate --help`")
    overrides = list(overrides)
    runs = protocol(ns.config, ns.seeds, ns.folds, overrides)
    name = ns.name or evaluation_name(ns.config, overrides)
    base = ns.runs / "evaluate" / name
    args = [a for c in ns.config for a in ("--config", c)] + overrides
    folds = sorted({f for _, f in runs if f is not None})
    what = f"{len(runs)} runs ({len({s for s, _ in runs})} seeds" + (f" × {len(folds)} folds)" if folds else ")")
    print(f"zoo evaluate: {what} in {shown(base)}", flush=True)
    if ns.dry_run:
        list_runs(base, runs)
        return 0
    results, pending = run_all(args, runs, base)
    stats = write_summary(ns.config, overrides, ns.seeds, len(folds) or None, results, pending, base)
    print(f"zoo evaluate: {len(results)} of {len(runs)} runs finished; test metrics, mean ± std:")
    print("\n".join(summary_lines(stats, len(runs))))
    print(f"  summary: {shown(base / SUMMARY)}", flush=True)
    failed = any(not r["metrics"] for r in results)
    return 1 if pending or failed or not results else 0
