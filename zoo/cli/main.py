"""Entry point of the ``zoo`` command. Sub-commands import their heavy dependencies lazily, so ``zoo --help``
answers without importing torch."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from zoo.cli.task_shortcut import expand_task_shortcut

HELP = """usage: zoo COMMAND [options]

Train and reproduce Mixture-of-Experts methods from many fields.

commands:
  fit | validate | test             LightningCLI: --config FILE [--key value ...]; `zoo fit --help` lists keys.
                                    --task NAME uses the task's default config.  Resume: --ckpt_path last
  predict RUN [--out DIR] [--data.init_args.path FILE] [--OPTION VALUE]
                                    apply a trained run (its folder or a .ckpt) to its test data or yours: writes
                                    the task's predictions and a picture into RUN/predictions/<stamp>
  list                              registered tasks (with load errors), their datasets, configs and routers
  reproduce TASK [--quick] [--only SUBSTRING] [--dry-run]
                                    run the task's benchmark rows (skipping recorded ones) and render
                                    leaderboard/TASK.md
  reproduce matrix [--only TASK] [--routers a,b]
                                    the router x task table: tune every router (and the dense twin) with the
                                    same budget, run the seeds -> leaderboard/router_matrix.md
  render TASK                       re-render leaderboard/TASK.md from its records (TASK matrix: the router table)
  evaluate --config FILE [--seeds 0 1 2] [--folds K] [--key value ...]
                                    the benchmark protocol on any config / your data (--data.init_args.path):
                                    fit + test per seed (x fold), mean ± std, under runs/evaluate/
  tune TASK --row METHOD/DATASET [--trials N] [--router NAME]
                                    Optuna search on the validation metric only (the task's declared space);
                                    resumable study under runs/tune/, prints the chosen values
  bench NAME [args]                 side-by-side benchmarks: moe, ep (expert parallel), tasks (every task's step vs
                                    its dense twin), and each task's own (`zoo list`)

environment: ZOO_DATA_DIR, ZOO_DATA_MIRROR (read-only dataset mirror), ZOO_CACHE_DIR (downloads, writable copies)
"""

LIGHTNING_COMMANDS = ("fit", "validate", "test")
# zoo's own benchmarks; every task adds its own through TaskSpec.benchmarks (zoo.registry.benchmarks)
CORE_BENCHES = {"moe": "zoo.bench.moe:main", "ep": "zoo.bench.expert_parallel:main", "tasks": "zoo.bench.tasks:main"}


def benches() -> dict[str, str]:
    """Every ``zoo bench`` program: NAME -> ``"package.module:function"``."""
    from zoo.registry import discover

    found = dict(CORE_BENCHES)
    for load in discover():
        for name, target in (getattr(load.spec, "benchmarks", None) or {}).items():
            found.setdefault(name, target)
    return found


def _bench_args(name: str, args: list[str]) -> list[str]:
    """A ``--quick`` smoke run of ``zoo bench moe`` writes under ``runs/``, never into ``leaderboard/results/``."""
    if name == "moe" and "--quick" in args and not any(a == "--out" or a.startswith("--out=") for a in args):
        import time

        out = Path("runs") / "bench" / "moe_layer" / f"quick-{time.strftime('%Y%m%d-%H%M%S')}.json"
        return [*args, "--out", str(out)]
    return args


def _release_process_group() -> None:
    """Destroy the process group a finished run left initialised (DDP). Lightning destroys it at exit for NCCL
    only; a gloo group (DDP on CPU) left to interpreter teardown can abort the finished process from its worker
    threads ("terminate called without an active exception", SIGABRT; pytorch/pytorch PR 179291 describes it).
    Only after a run that returned: after an exception the other ranks may still wait in a collective."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


def _run(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(HELP)
        return 0
    command, rest = argv[0], argv[1:]
    if command in LIGHTNING_COMMANDS:
        from zoo.cli.lightning_cli import ZooCLI

        # LightningCLI reads sys.argv; DDP's launcher re-executes it in each worker, so it must hold the
        # expanded arguments, not the original program-relative ones.
        sys.argv = [sys.argv[0], command, *expand_task_shortcut(rest)]
        ZooCLI()
        _release_process_group()
        return 0
    if command == "predict":
        from zoo.cli.predict import predict_main

        return predict_main(rest)
    if command == "list":
        from zoo.cli.list_cmd import list_tasks

        return list_tasks(rest)
    if command in ("reproduce", "render"):
        from zoo.cli.reproduce import reproduce_main

        return reproduce_main([command, *rest])
    if command == "evaluate":
        from zoo.cli.evaluate import evaluate_main

        return evaluate_main(rest)
    if command == "tune":
        from zoo.cli.tune import tune_main

        return tune_main(rest)
    if command == "bench":
        known = benches()
        if not rest or rest[0] not in known:
            from zoo.errors import ConfigError

            raise ConfigError(f"unknown benchmark {rest[0] if rest else ''!r}; choose from: {', '.join(known)}")
        from zoo.cli.quiet import quiet_third_party
        from zoo.registry import load_object

        quiet_third_party()  # a benchmark's Lightning fits print the same adverts as `zoo fit`
        return int(load_object(known[rest[0]])(_bench_args(rest[0], rest[1:])) or 0)
    from zoo.errors import ConfigError

    raise ConfigError(f"unknown command {command!r}; run `zoo --help`")


def _user_error(exc: BaseException) -> BaseException | None:
    """The ZooError (or Lightning configuration error) behind ``exc``, if any (jsonargparse and Lightning may wrap
    it), else a ConfigError naming a third-party package that is not installed and the extra that installs it.
    Imports nothing heavy: a failure before torch was imported can only be a ZooError itself."""
    from zoo.errors import ConfigError, ZooError
    from zoo.registry import missing_dependency

    if "zoo.cli.config_errors" not in sys.modules and "pytorch_lightning" not in sys.modules:
        user = exc if isinstance(exc, ZooError) else None
    else:
        from zoo.cli.config_errors import user_error_in

        user = user_error_in(exc)
    missing = None if user is not None else missing_dependency(exc)
    return user or (ConfigError(missing) if missing else None)


def main(argv: list[str] | None = None) -> int:
    """The ``zoo`` command: its exit status; user errors print one line (exit 2), real bugs their traceback."""
    argv = sys.argv[1:] if argv is None else argv
    try:
        code = _run(argv)
    except KeyboardInterrupt:
        print("zoo: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # output piped into e.g. `head`, which closed early: not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as exc:  # noqa: BLE001 - user errors become one line; real bugs keep their traceback
        user = _user_error(exc)
        if user is None:
            raise
        print(f"zoo: error: {user}", file=sys.stderr)
        return 2
    return code


if __name__ == "__main__":
    sys.exit(main())
