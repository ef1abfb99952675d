"""Applying a trained run: each task's predictor, what it returns (:class:`Prediction`), and how that is written.

A task declares how its models predict in a ``predict`` module beside its model's module (the model
``zoo_tasks.graphs.module:NodeClassifier`` -> ``zoo_tasks.graphs.predict``), as a table from model class name to
a function::

    PREDICTORS = {"NodeClassifier": predict_nodes}

    def predict_nodes(run: TrainedRun, split: str = "test") -> Prediction: ...

The function's keyword arguments are the predictor's options: ``zoo predict RUN --split val`` sets them (parsed
from the signature and its type hints by jsonargparse), and so does ``zoo.api.predict(run, split="val")``. It
returns a :class:`Prediction`: the arrays the Python API hands back, and the tables, JSON documents and pictures
that ``zoo predict`` writes. Writing is the same for every task (here): into a temporary folder first, renamed
into place when every file is written, so a failed or killed prediction leaves no half-written folder.
"""

from __future__ import annotations

import csv
import importlib
import json
import os
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zoo.errors import ConfigError

PREDICT_MODULE = "predict"


@dataclass
class Prediction:
    """What a trained model predicted.

    outputs: the results as arrays or lists (what ``zoo.api.predict`` returns; a test compares them with the files).
    tables: CSV files, ``name -> rows`` (each row a dict, all rows with the same keys), written as ``<name>.csv``.
    documents: JSON files, ``name -> object``, written as ``<name>.json``.
    pictures: ``file name -> draw(path)``: pictures (PNG, GIF, MP4) drawn by the task into the given path.
    summary: one line per fact worth printing after the files (counts, a metric on labelled data).
    """

    outputs: dict[str, Any] = field(default_factory=dict)
    tables: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    documents: dict[str, Any] = field(default_factory=dict)
    pictures: dict[str, Callable[[Path], None]] = field(default_factory=dict)
    summary: list[str] = field(default_factory=list)

    def save(self, folder: str | Path) -> list[Path]:
        """Write every table, document and picture into ``folder`` (which must not exist yet); the paths written.

        The files are written into a temporary sibling folder, which is renamed to ``folder`` once all are written.
        """
        folder = Path(folder)
        if folder.exists():
            raise ConfigError(f"{folder} exists already: pass --out with a new folder (predictions never overwrite)")
        folder.parent.mkdir(parents=True, exist_ok=True)
        partial = folder.with_name(f".{folder.name}.partial-{os.getpid()}")
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir()
        try:
            names = [*(f"{n}.csv" for n in self.tables), *(f"{n}.json" for n in self.documents), *self.pictures]
            if len(set(names)) != len(names):
                raise ValueError(f"a prediction names one file twice: {sorted(names)}")
            for name, rows in self.tables.items():
                write_csv(partial / f"{name}.csv", rows)
            for name, document in self.documents.items():
                (partial / f"{name}.json").write_text(json.dumps(document, indent=1, default=_plain) + "\n")
            for name, draw in self.pictures.items():
                draw(partial / name)
            partial.rename(folder)
        except BaseException:
            shutil.rmtree(partial, ignore_errors=True)
            raise
        return [folder / name for name in names]


def _plain(value: Any) -> Any:
    """numpy scalars and arrays in JSON documents."""
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def write_csv(path: Path, rows: Sequence[Mapping[str, Any]]) -> None:
    """Rows with the same keys as one CSV file with a header (an empty table is a file with no lines)."""
    with path.open("w", newline="") as fh:
        if not rows:
            return
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        for row in rows:
            writer.writerow({k: _plain(v) if hasattr(v, "tolist") else v for k, v in row.items()})


def predictor_module(model_class: str) -> str:
    """``"zoo_tasks.graphs.module.NodeClassifier"`` (or ``module:Class``) -> ``"zoo_tasks.graphs.predict"``."""
    module = model_class.replace(":", ".").rpartition(".")[0]
    return f"{module.rpartition('.')[0]}.{PREDICT_MODULE}"


def find_predictor(model_class: str) -> Callable[..., Prediction]:
    """The predictor function a task declares for ``model_class`` (see the module docstring); ConfigError if none."""
    name = model_class.replace(":", ".").rpartition(".")[2]
    module_name = predictor_module(model_class)
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name != module_name:
            raise
        raise ConfigError(f"{name} cannot predict: its task has no {module_name} module declaring PREDICTORS") from None
    table = getattr(module, "PREDICTORS", {})
    if name not in table:
        known = ", ".join(sorted(table)) or "none"
        raise ConfigError(f"{name} cannot predict: {module_name}.PREDICTORS has no entry for it (it has: {known})")
    return table[name]


def predict(run: Any, **options: Any) -> Prediction:
    """What ``run`` (a :class:`zoo.trained.TrainedRun`) predicts with its task's predictor and ``options``."""
    import torch

    predictor = find_predictor(run.model_class)
    with torch.no_grad():
        return predictor(run, **options)
