"""``zoo tune TASK --row METHOD/DATASET``: search the row's hyper-parameters on the validation metric only.

The space is the one the task declares for the row's method (``TaskSpec.search_spaces``), plus the router's own
knobs when ``--router`` names one (``zoo.tuning.router_knobs``). Trials use the tuning seed (``--seed``, default
``TUNE_SEED``, none of the benchmark seeds) and, for cross-validated rows, fold 0's training folds (its
validation split is carved from them); no trial is tested. The study is stored under
``runs/tune/<task>/<row>[__<router>]/`` and resumes when the command is run again with the same code and settings;
a study whose trials ran other code or settings is moved aside and the search starts afresh (its folder's
``study_code.json``: ``zoo.runner.run_folder.code_and_settings`` of the trials' arguments). The result (``best.json``)
holds the chosen values and the overrides that apply them; ``zoo reproduce`` applies them to rows that ask for
tuning, and ``zoo reproduce matrix`` to every cell of the router table.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from zoo.errors import ConfigError
from zoo.registry import get_task
from zoo.runner.rows import find_row
from zoo.runner.stop_signal import stopping_between_runs
from zoo.runner.tuning import TUNE_SEED, tune_row


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="zoo tune", description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("task")
    p.add_argument("--row", required=True, help="benchmark row 'method/dataset' (or a unique part of it)")
    p.add_argument("--trials", type=int, default=20, help="finished trials (complete or pruned) to run")
    p.add_argument("--router", default=None, help="tune this router (zoo.moe.ROUTERS) and its knobs")
    p.add_argument("--seed", type=int, default=TUNE_SEED, help=f"seed of every trial (default {TUNE_SEED})")
    p.add_argument("--runs", type=Path, default=None, help="folder for the study and its trials (default: runs/)")
    return p


@stopping_between_runs
def tune_main(argv: list[str]) -> int:
    """``zoo tune ...``: parse, run or read back the row's study (``zoo.runner.tuning``) and print its choice."""
    ns, extra = _parser().parse_known_args(argv)
    if ns.trials < 1:
        raise ConfigError(f"--trials {ns.trials}: must be at least 1")
    spec = get_task(ns.task)
    row = find_row(spec, ns.row)
    if ns.router:
        from zoo.moe import ROUTERS

        if ns.router not in ROUTERS:
            raise ConfigError(f"unknown router {ns.router!r}; valid: {', '.join(sorted(ROUTERS))}")
    result = tune_row(spec, row, ns.trials, ns.router, tuple(extra), ns.seed, ns.runs)
    print(
        f"zoo tune {spec.name} {row.method}/{row.dataset}"
        + (f" router={ns.router}" if ns.router else "")
        + f": best {result.metric} {result.value:.4f} over {result.trials} trials ({result.pruned} pruned)"
    )
    for key, value in result.params.items():
        print(f"  {key} = {value}")
    print(f"  study: {result.study}")
    print(f"  zoo fit --config {spec.config_path(row.config)} {' '.join([*row.overrides, *result.overrides])}")
    return 0
