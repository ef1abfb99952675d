"""Short-training comparisons (issue 59, item 2): the authors' code and ours, trained on the same data with the same
budget and seeds, one record per (comparison, side, seed) in ``leaderboard/results/fidelity_training/``.

    python -m scripts.parity.short_training patchtst-etth1 --side theirs --seeds 0 1 2 \\
        --upstream /tmp/upstream/patchtst --python /tmp/parity-venv/bin/python
    python -m scripts.parity.short_training patchtst-etth1 --side ours --seeds 0 1 2
    python -m scripts.parity.render            # the fidelity page's "Short training" section reads the records

Their side runs the upstream code as their README runs it, in a scratch copy of their folder (they write
checkpoints and results into the working directory), with a Python that has their requirements (``--python``);
the project holds none of their code. Our side is ``zoo fit`` then ``zoo test`` of the task's benchmark config with
the comparison's overrides (``zoo.cli.fit_test``), recorded like every benchmark run (config, source hash,
versions, machine). Where the two setups cannot be made equal, ``differences`` says how they differ; the fidelity
page prints it beside the two distributions.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

from scripts.parity.short_spec import ShortTraining

REPO = Path(__file__).resolve().parents[2]
RECORDS = REPO / "leaderboard" / "results" / "fidelity_training"
DEFINITIONS = ("scripts.parity.short_patchtst", "scripts.parity.short_dyglib", "scripts.parity.short_simba")


def comparisons() -> dict[str, ShortTraining]:
    """Every comparison of the definition modules that exist, by name."""
    found = {}
    for name in DEFINITIONS:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
            continue
        found.update({c.name: c for c in module.COMPARISONS})
    return found


def record_path(comparison: str, side: str, seed: int) -> Path:
    return RECORDS / f"{comparison}__{side}__seed{seed}.json"


def _write(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True, default=str) + "\n")
    tmp.replace(path)  # a killed run leaves no half-written record


def _their_versions(python: str, packages: tuple[str, ...]) -> dict[str, str]:
    """Python's and ``packages``' versions in their environment (``None`` for a package it does not have)."""
    code = (
        "import importlib, json, sys\n"
        "def version(name):\n"
        "    try:\n"
        "        return str(importlib.import_module(name).__version__)\n"
        "    except Exception:\n"
        "        return None\n"
        f"print(json.dumps({{'python': sys.version.split()[0], **{{n: version(n) for n in {list(packages)!r}}}}}))"
    )
    return json.loads(subprocess.run([python, "-c", code], capture_output=True, text=True, check=True).stdout)


def run_theirs(c: ShortTraining, seed: int, upstream: Path, python: str, mirror: Path) -> dict:
    from zoo.leaderboard.cpu_identity import record_machine

    argv = c.theirs(seed, mirror)
    with tempfile.TemporaryDirectory(prefix=f"theirs-{c.name}-") as scratch:
        folder = Path(scratch) / (c.theirs_folder or upstream.name)
        shutil.copytree(upstream / c.theirs_folder if c.theirs_folder else upstream, folder)
        start = time.perf_counter()
        done = subprocess.run([python, "-u", *argv], cwd=folder, capture_output=True, text=True)
        wall = time.perf_counter() - start
    if done.returncode:
        sys.exit(f"their run failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    return {
        "comparison": c.name,
        "side": "theirs",
        "seed": seed,
        "metrics": c.parse(done.stdout),
        "upstream": c.upstream,
        "upstream_commit": c.upstream_commit,
        "command": [Path(python).name, *argv],
        "wall_time_s": round(wall, 1),
        "versions": _their_versions(python, c.their_packages),
        "machine": record_machine(),
        "recorded": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def run_ours(c: ShortTraining, seed: int) -> dict:
    from zoo.cli.fit_test import fit_and_test
    from zoo.runner.records import record_of

    args = [*c.ours, "--seed_everything", str(seed)]
    with tempfile.TemporaryDirectory(prefix=f"ours-{c.name}-") as scratch:
        result = fit_and_test(args, Path(scratch) / "run")
    record = record_of(result, c.task, f"{c.method}@{c.name}", c.dataset, seed, None, True, c.budget)
    return {"comparison": c.name, "side": "ours", "command": ["zoo", "fit", *args], **asdict(record)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    known = comparisons()
    parser.add_argument("comparison", choices=sorted(known))
    parser.add_argument("--side", choices=("theirs", "ours"), required=True)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--upstream", type=Path, help="their checkout (theirs)")
    parser.add_argument("--python", default=sys.executable, help="a Python with their requirements (theirs)")
    parser.add_argument("--force", action="store_true", help="re-run seeds that have a record")
    args = parser.parse_args(argv)
    c = known[args.comparison]
    if args.side == "theirs" and args.upstream is None:
        parser.error("--side theirs needs --upstream PATH (their checkout)")
    from zoo.data.resolve import data_mirror

    for seed in args.seeds:
        out = record_path(c.name, args.side, seed)
        if out.exists() and not args.force:
            print(f"{out.name}: recorded already (--force re-runs it)")
            continue
        if args.side == "theirs":
            mirror = data_mirror()
            if mirror is None:
                parser.error("their side reads the dataset mirror: set ZOO_DATA_MIRROR")
            data = run_theirs(c, seed, args.upstream.resolve(), args.python, mirror)
        else:
            data = run_ours(c, seed)
        _write(out, data)
        print(f"{out.name}: {data['metrics']} ({data['wall_time_s']:.0f} s)", flush=True)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    raise SystemExit(main())
