"""Example figures on a task's page: images a run wrote into its folder under ``runs/`` (which git ignores),
copied into ``leaderboard/results/<task>/plots/`` and embedded where a task declares ``Examples``
(``zoo.leaderboard.tables``).

A record names its run's figures in ``extra`` (a path, or a mapping from a name to a path, e.g. DroneDINO's
``extra.detection_figures`` = {task: png}). Copying is a step taken by hand after a grid, on the machine that ran
it (the run folders exist only there)::

    python -m zoo.leaderboard.example_plots dronedino detection_figures

copies each such figure that exists here to ``plots/<record key>__<name>.png``; the page then shows every PNG in
``plots/``. A figure is a picture of one run, not a number: it is not checked against the records.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from zoo.leaderboard.record import RunRecord, read_record, results_dir

PLOTS = "plots"


def plots_dir(task: str, results: Path | None = None) -> Path:
    return (results_dir(task) if results is None else Path(results)) / PLOTS


def example_plot_lines(
    task: str, heading: str | None = None, results: Path | None = None, pattern: str = "*.png"
) -> list[str]:
    """Markdown lines embedding every figure matching ``pattern`` in the task's plots folder (links relative to
    ``leaderboard/``), under ``## heading`` when given; no lines when there is none."""
    plots = sorted(plots_dir(task, results).glob(pattern))
    if not plots:
        return []
    lines = [f"## {heading}", ""] if heading else []
    return lines + [f"![{p.stem}](results/{task}/{PLOTS}/{p.name})" for p in plots] + [""]


def figures_named(record: RunRecord, key: str) -> dict[str, Path]:
    """The figures ``record.extra[key]`` names, as {suffix: path}: a mapping gives its own names, a single path
    the suffix ``key``."""
    value = (record.extra or {}).get(key)
    if not value:
        return {}
    items = value.items() if isinstance(value, dict) else [(key, value)]
    return {str(name): Path(path) for name, path in items}


def copy_figures(task: str, key: str, results: Path | None = None) -> tuple[list[Path], list[Path]]:
    """Copy the figures ``extra[key]`` of each record of ``task`` names into its plots folder; returns (copied,
    missing here)."""
    folder = results_dir(task) if results is None else Path(results)
    copied, missing = [], []
    for path in sorted(folder.glob("*.json")):
        record = read_record(path)
        for name, figure in figures_named(record, key).items():
            if not figure.is_file():
                missing.append(figure)
                continue
            target = plots_dir(task, folder) / f"{path.stem}__{name}{figure.suffix}"
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(figure, target)
            copied.append(target)
    return copied, missing


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m zoo.leaderboard.example_plots", description=__doc__.splitlines()[0])
    p.add_argument("task")
    p.add_argument("key", help="the records' extra key that names the figures, e.g. detection_figures")
    p.add_argument("--results", type=Path, default=None, help="the task's results folder (default: the repo's)")
    ns = p.parse_args(argv)
    copied, missing = copy_figures(ns.task, ns.key, ns.results)
    for target in copied:
        print(f"copied {target}")
    for figure in missing:
        print(f"not on this machine: {figure}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
