"""`zoo bench tasks`: one training step of every task's benchmark config, its MoE method against its dense twin.

    zoo bench tasks [--task NAME ...] [--repeats 7] [--warmup 2] [--profiled 1] [--threads 2]
                    [--regimes idle-unset,contended-unset,flops] [--leaderboard | --out DIR]
    zoo bench tasks --render-only [--out DIR]          # re-render the page from the records

For each task, the pair of ``zoo.bench.task_pairs`` (its first declared dense twin, on the first dataset both have a
benchmark row for, with the row's config and overrides) is built as ``zoo fit`` builds it and trained on its real
data; their training steps (forward, backward, optimiser step; under manual optimisation whatever the step does, e.g.
an RL agent's environment step and updates) run one at a time in turn in one process (``zoo.bench.step_clock``): the
medians of ``--repeats`` interleaved steps after ``--warmup`` are compared, then ``--profiled`` more steps per model
give the share of routing, dispatch, expert GEMMs and combine (``zoo.bench.phase_split``). Each regime of
``zoo.bench.contention`` (idle or contended cores x OpenMP wait policy; default the two with the policy users have)
runs every task in its own child process, ``--threads`` torch threads. The pseudo-regime ``flops`` times nothing: it
counts the FLOPs of one training step of each model after the warm-up (``zoo.bench.flop_step``; counts do not depend
on the load, so it may run on a busy machine).

A task whose data, optional package or prerequisite run is missing gets a record that says so in one line (no
numbers). Records (``zoo.bench.provenance``: commit, source hash of the bench and the task's modules, machine,
command), one per task: with ``--leaderboard`` in ``leaderboard/results/task_speed/<stamp>-<task>.json``, and the
page ``leaderboard/task_speed.md`` is rendered from the newest record of each task and regime
(``zoo.bench.task_speed_page``); with ``--out DIR``, ``DIR/<task>.json`` and ``DIR/task_speed.md``; else
``runs/bench/tasks/<stamp>/``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from contextlib import nullcontext
from pathlib import Path

from zoo.bench.contention import REGIMES, companion, env_for
from zoo.bench.provenance import BenchRun, load_average, record_folder, stamp

MODULE = "zoo.bench.tasks"  # with the step clock, the phase split, zoo fit's builder (its closure)
NAME = "tasks"
DEFAULT_REGIMES = "idle-unset,contended-unset"
FLOPS = "flops"  # the counting pseudo-regime
RUNS = (*REGIMES, FLOPS)
PAGE = "task_speed.md"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="zoo bench tasks", description=__doc__.split("\n\n")[0])
    p.add_argument("--task", action="append", default=None, help="a task to time (repeatable); default: every task")
    p.add_argument("--repeats", type=int, default=7, help="timed training steps per model (the median is reported)")
    p.add_argument("--warmup", type=int, default=2, help="training steps dropped before the timed ones")
    p.add_argument("--profiled", type=int, default=1, help="steps per model after the timed ones, for the split")
    p.add_argument("--threads", type=int, default=2, help="torch intra-op threads")
    p.add_argument("--regimes", default=DEFAULT_REGIMES, help=f"comma-separated, of {', '.join(RUNS)}")
    p.add_argument("--companion-threads", type=int, default=2, help="threads of the contended regimes' GEMM loop")
    p.add_argument("--render-only", action="store_true", help="only re-render the page from the records")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--out", type=Path, default=None, help="folder for the records (<task>.json) and the page")
    where.add_argument("--leaderboard", action="store_true", help="records and page where the leaderboard reads them")
    p.add_argument("--in-regime", default=None, help=argparse.SUPPRESS)  # the child process
    p.add_argument("--part", type=Path, default=None, help=argparse.SUPPRESS)
    return p


def child(args: argparse.Namespace) -> int:
    """Inside one regime's child process: measure one task, write the part (measured numbers or one-line failure)."""
    import torch

    from zoo.bench.task_pairs import fit_args, pair_for
    from zoo.bench.task_step import count, measure
    from zoo.errors import ZooError
    from zoo.registry import get_task, missing_dependency

    torch.set_num_threads(args.threads)
    part: dict = {"omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", "unset"), "load_avg_start": load_average()}
    spec = get_task(args.task[0])
    pair = pair_for(spec)
    with tempfile.TemporaryDirectory(prefix="zoo-bench-tasks-") as tmp:
        builds = {role: fit_args(spec, getattr(pair, role), Path(tmp) / role) for role in ("moe", "dense")}
        try:
            if args.in_regime == FLOPS:
                part |= {"status": "measured", **count(builds, args.warmup)}
            else:
                part |= {"status": "measured", **measure(builds, args.warmup, args.repeats, args.profiled)}
        except Exception as exc:  # noqa: BLE001 - the record says why, in one line; the other tasks go on
            missing = missing_dependency(exc)
            cause = exc.__cause__ if isinstance(exc.__cause__, ZooError) else exc
            refused = missing or isinstance(cause, ZooError)  # a package, a prerequisite run or a setting: not measured
            reason = (missing or f"{type(cause).__name__}: {cause}").strip()
            part |= {"status": "not measured" if refused else "failed", "reason": (reason or repr(exc)).splitlines()[0]}
    part |= {"threads": torch.get_num_threads(), "load_avg_end": load_average()}
    args.part.write_text(json.dumps(part) + "\n")
    return 0


def run_regime(task: str, regime: str, args: argparse.Namespace, folder: Path) -> dict:
    """One task in one regime, in its own child process (with the companion load when contended)."""
    from zoo.registry import repository_root

    contended, policy = REGIMES.get(regime, (False, None))
    part = folder / f"{task}-{regime}.json"
    cmd = [sys.executable, "-m", MODULE, *_settings_args(args), "--task", task, "--in-regime", regime]
    cmd += ["--part", str(part)]
    with companion(args.companion_threads) if contended else nullcontext():
        code = subprocess.call(cmd, env=env_for(policy), cwd=str(repository_root()))
    if code != 0 or not part.is_file():
        return {"status": "failed", "reason": f"the measuring process exited with code {code}"}
    return json.loads(part.read_text())


def _settings_args(args: argparse.Namespace) -> list[str]:
    return [
        f"--repeats={args.repeats}",
        f"--warmup={args.warmup}",
        f"--profiled={args.profiled}",
        f"--threads={args.threads}",
    ]


def settings(args: argparse.Namespace, regimes: list[str]) -> dict:
    """The measurement settings a record keeps."""
    return {
        "repeats": args.repeats,
        "warmup": args.warmup,
        "profiled": args.profiled,
        "threads": args.threads,
        "regimes": regimes,
        "companion_threads": args.companion_threads,
    }


def record_task(task: str, args: argparse.Namespace, regimes: list[str], raw: list[str], out: Path) -> dict:
    """Measure one task in every regime (or say in one line why not) and write its record to ``out``."""
    from zoo.bench.task_pairs import missing_requirement, pair_for, task_roots
    from zoo.errors import ZooError
    from zoo.registry import get_task

    try:
        spec = get_task(task)
        pair = pair_for(spec)
    except ZooError as exc:  # a task that does not load
        spec, pair = None, str(exc).splitlines()[0]
    bench = BenchRun(NAME, [MODULE, *(task_roots(spec) if spec else [])], raw)
    numbers: dict = {"task": task, "settings": settings(args, regimes)}
    if isinstance(pair, str):
        return bench.write({**numbers, "status": "not measured", "reason": pair}, out, threads=args.threads)
    numbers["pair"] = pair.described()
    missing = missing_requirement(spec, pair)
    if missing:
        return bench.write({**numbers, "status": "not measured", "reason": missing}, out, threads=args.threads)
    results = {}
    with tempfile.TemporaryDirectory(prefix="zoo-bench-tasks-") as tmp:
        for regime in regimes:
            print(f"{task}: regime {regime} ...", flush=True)
            results[regime] = run_regime(task, regime, args, Path(tmp))
            if results[regime].get("status") == "not measured":  # the same in every regime: say it once
                numbers |= {"status": "not measured", "reason": results[regime].get("reason", "?")}
                return bench.write(numbers, out, threads=args.threads)
    failed = [r for r in results.values() if r.get("status") != "measured"]
    numbers |= {"status": "failed" if failed else "measured", "regimes": results}
    if failed:
        numbers["reason"] = failed[0].get("reason", "?")
    return bench.write(numbers, out, threads=args.threads, regime=",".join(regimes))


def record_paths(args: argparse.Namespace, task: str, run_stamp: str) -> Path:
    """Where a task's record goes (see the module doc)."""
    if args.out is not None:
        return args.out / f"{task}.json"
    if args.leaderboard:
        return record_folder(NAME) / f"{run_stamp}-{task}.json"
    return Path("runs") / "bench" / NAME / run_stamp / f"{task}.json"


def render(args: argparse.Namespace, folder: Path) -> Path:
    """Render the page from the newest record of each task and regime in ``folder``; the leaderboard's index too."""
    from zoo.bench.task_speed_page import newest_records, render_page
    from zoo.registry import discover, repository_root

    tasks = sorted({load.name for load in discover()})
    leaderboard = repository_root() / "leaderboard"
    page_path = leaderboard / PAGE if args.leaderboard else folder / PAGE
    records = newest_records(folder)
    page_path.parent.mkdir(parents=True, exist_ok=True)
    page_path.write_text(render_page(records, tasks, page_path.parent))
    if args.leaderboard:
        from zoo.leaderboard.render import render_index

        (leaderboard / "README.md").write_text(render_index(leaderboard))
    print(f"wrote {page_path}", flush=True)
    return page_path


def main(argv: list[str] | None = None) -> int:
    raw = list(argv if argv is not None else sys.argv[1:])
    args = _parser().parse_args(raw)
    if args.in_regime:
        return child(args)
    regimes = [r for r in args.regimes.split(",") if r]
    bad = [r for r in regimes if r not in RUNS]
    if bad:
        print(f"zoo bench tasks: unknown regimes {', '.join(bad)}; valid: {', '.join(RUNS)}", file=sys.stderr)
        return 2
    run_stamp = stamp()
    folder = record_paths(args, "x", run_stamp).parent
    if args.render_only:
        if not (args.leaderboard or args.out):
            print("zoo bench tasks --render-only needs --leaderboard or --out DIR", file=sys.stderr)
            return 2
        render(args, folder)
        return 0
    from zoo.registry import discover

    tasks = args.task or sorted(load.name for load in discover())
    for task in tasks:
        record = record_task(task, args, regimes, raw, record_paths(args, task, run_stamp))
        print(f"{task}: {record['status']}" + (f" ({record['reason']})" if record.get("reason") else ""), flush=True)
    render(args, folder)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
