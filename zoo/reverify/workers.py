"""Run the probe worker once per commit: that commit's clean tree, imported through a shim, every group of the job.

Every commit's tree is moved to the same folder (``<work>/tree``) and every probe runs in the same folder
(``<work>/run``) while its worker runs, so that paths the run writes into its state (a checkpoint folder, a
config file's name) are equal for two commits whose code behaves the same. Workers therefore run one at a time.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from zoo.errors import ConfigError
from zoo.reverify.checkouts import Trees, make_shim, overlay, worker_env

WORKER = "zoo/reverify/probe_worker.py"


@dataclass
class WorkerRun:
    """What one worker process gave: each group's result line (by group id), its wall time and its log file."""

    commit: str
    results: dict[str, dict]
    seconds: float
    log: Path
    returncode: int


def worker_script(trees: Trees) -> Path:
    """HEAD's probe worker, copied out of HEAD's tree: one probe definition for every commit."""
    source = trees.tree(trees.head) / WORKER
    if not source.is_file():
        raise ConfigError(f"{WORKER} is not committed at HEAD ({trees.head[:10]}): commit it to re-verify records")
    target = trees.work / "probe_worker.py"
    shutil.copyfile(source, target)
    return target


def cache_source() -> Path:
    from zoo.data.resolve import cache_dir

    return cache_dir()


def run_worker(trees: Trees, commit: str, groups: list[dict], script: Path, timeout: float | None = None) -> WorkerRun:
    """Probe ``groups`` (``{"id", "config", "runs", "threads"}``) with the code of ``commit``."""
    work = trees.work
    tree, run_tree = trees.tree(commit), work / "tree"
    if run_tree.exists():
        shutil.rmtree(run_tree)
    tree.rename(run_tree)
    out, log = work / f"probe-{commit[:12]}.jsonl", work / f"probe-{commit[:12]}.log"
    out.unlink(missing_ok=True)
    job = work / "job.json"
    job.write_text(json.dumps({"work": str(work), "tree": str(run_tree), "groups": groups}))
    env = worker_env(make_shim(run_tree, work / "shim"), overlay(cache_source(), work / "cache"))
    start = time.perf_counter()
    try:
        with log.open("w") as fh:
            done = subprocess.run(
                [sys.executable, str(script), str(job), str(out)],
                env=env,
                cwd=work,
                stdout=fh,
                stderr=subprocess.STDOUT,
                timeout=timeout,
                check=False,
            )
    finally:
        run_tree.rename(tree)
    results = {}
    if out.is_file():
        for line in out.read_text().splitlines():
            entry = json.loads(line)
            results[entry["id"]] = entry
    return WorkerRun(commit, results, round(time.perf_counter() - start, 2), log, done.returncode)
