"""Fit then test one run into its own folder: the driver ``zoo reproduce`` and ``zoo evaluate`` share.

Everything in this module (and what it imports) can change a benchmark number, so it is a root of the code
closure that ``zoo.code_closure.source_hash`` fingerprints; the reproduce/evaluate command lines, record writing
and page rendering live elsewhere and are not part of it.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

from zoo.runinfo import dirty_sources


def last_checkpoint(run_dir: Path) -> Path:
    """The checkpoint a killed run resumes from."""
    return run_dir / "checkpoints" / "last.ckpt"


@dataclass
class FitTest:
    """What one fit-then-test run gives: test metrics, the resolved config, extra results and timing."""

    metrics: dict[str, float]
    config: dict
    extra: dict
    wall_time_s: float
    routing: dict
    tested: str  # "best" or "last": the weights the test metrics come from


def fit_and_test(args: list[str], run_dir: Path) -> FitTest:
    """Build ``ZooCLI(args)`` writing into ``run_dir``, fit (resuming ``run_dir``'s ``last.ckpt`` when a killed run
    left one), then test the best checkpoint when the model names a monitor, else the last weights. Shared by
    ``zoo reproduce`` and ``zoo evaluate``."""
    from zoo.callbacks.run_metadata import RunMetadata, data_sha256
    from zoo.cli.lightning_cli import ZooCLI

    args = [*args, "--trainer.default_root_dir", str(run_dir)]
    start = time.perf_counter()
    argv, sys.argv = sys.argv, sys.argv[:1]  # LightningCLI warns when given both args and a command line
    try:
        cli = ZooCLI(args=args, run=False)
    finally:
        sys.argv = argv
    trainer, model = cli.trainer, cli.model
    last = last_checkpoint(run_dir)
    resumed = last.exists()
    if resumed:
        check_resumable(last, trainer, run_dir)
    trainer.fit(model, datamodule=cli.datamodule, ckpt_path=str(last) if resumed else None, weights_only=True)
    # time spent before a restart, as the resumed checkpoint says (work lost after that checkpoint is not counted)
    prior = next((cb.prior_s for cb in trainer.callbacks if isinstance(cb, RunMetadata)), 0.0)
    best = trainer.checkpoint_callback.best_model_path if trainer.checkpoint_callback else ""
    use_best = bool(getattr(model, "checkpoint_monitor", None) and best)
    trainer.test(
        model, datamodule=cli.datamodule, ckpt_path="best" if use_best else None, verbose=False, weights_only=True
    )
    metrics = {k: float(v) for k, v in trainer.callback_metrics.items() if k.startswith("test/") and v.numel() == 1}
    extra = model.extra_results() if hasattr(model, "extra_results") else {}
    extra["resumed_from_checkpoint"] = resumed
    extra["wall_time_before_resume_s"] = round(prior, 2)
    hashes = data_sha256(cli.datamodule)
    if hashes:
        extra["data_sha256"] = hashes
    dirty = dirty_sources()
    if dirty:
        extra["dirty_files"] = dirty[:50]
    return FitTest(
        metrics=metrics,
        config=yaml.safe_load(cli.parser.dump(cli.config, skip_none=False)),
        extra=extra,
        wall_time_s=round(time.perf_counter() - start + prior, 2),
        routing=routing_summary(trainer),
        tested="best" if use_best else "last",
    )


def check_resumable(last: Path, trainer, run_dir: Path) -> None:
    """Refuse, in one line, to resume a checkpoint left in ``run_dir`` by a run of another model, data or
    settings (the row's config changed since that run was killed): resuming it would record a mixture."""
    from zoo.callbacks.run_identity import IDENTITY_KEY, RunIdentity
    from zoo.cli.checkpoint_check import check_identity, load_checkpoint
    from zoo.errors import ConfigError

    current = next((cb.identity for cb in trainer.callbacks if isinstance(cb, RunIdentity)), None)
    loaded = load_checkpoint(last, flag="resume")
    try:
        if current is not None:
            check_identity(loaded.get(IDENTITY_KEY), current, last, fitting=True)
    except ConfigError as exc:
        reason = str(exc).split(": ", 1)[-1].split("; ")[0]
        raise ConfigError(f"{last}: {reason}; delete {run_dir} to run this row afresh") from None


def routing_summary(trainer) -> dict:
    """What the routing-stats callback wrote for this run (``routing_summary.json`` in its log folder), or {}."""
    path = Path(trainer.log_dir or trainer.default_root_dir) / "routing_summary.json"
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
