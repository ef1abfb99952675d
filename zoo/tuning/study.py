"""The Optuna study behind ``zoo tune``: TPE over a declared space, scored on the validation metric only.

Each trial is one ``zoo fit`` of the row's config (plus the trial's values) with the tuning seed, in its own run
folder; its score is the best validation value of the model's ``checkpoint_monitor`` over the fit (or, for a
model without one, the last value of the task's ``tune_metric``). No trial is ever tested. The study lives in a
journal file (``optuna.storages.JournalStorage``) beside the trial folders, so a killed ``zoo tune`` resumes: the
trial it was running is marked failed and re-drawn, finished trials count towards the budget. A median pruner
stops trials whose validation curve is below the median of earlier trials at the same epoch.

Optuna is the tool for this (the ``tune`` extra); what is written here is the glue to the zoo's runs: the
objective, the pruning callback (``optuna-integration``'s needs that package and lags Lightning releases) and
the budget accounting.
"""

from __future__ import annotations

import json
import math
import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pytorch_lightning as pl

from zoo.errors import ConfigError, ZooError
from zoo.tuning.space import SearchSpace, as_overrides, describe, suggest

STUDY_FILE = "study.journal"


class NoValidationData(ZooError):
    """The row has no validation split: every trial would fail the same way, so the study stops at once."""


BEST_FILE = "best.json"


@dataclass
class TuneResult:
    """What a finished study chose: its values (and the overrides that apply them) and how it was searched."""

    params: dict[str, Any]
    overrides: list[str]
    value: float
    metric: str
    direction: str
    trials: int  # finished trials (complete or pruned) the choice was made from
    pruned: int
    space: str
    seed: int
    study: str
    trial_values: list[float | None] = field(default_factory=list)
    trial_wall_s: list[float] = field(default_factory=list)  # each finished trial's fit, as optuna timed it

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class _PruneOnValidation(pl.Callback):
    """Report the monitored validation value to the trial after each validation; stop when Optuna prunes."""

    def __init__(self, trial: Any, monitor: str) -> None:
        self.trial, self.monitor = trial, monitor

    def on_validation_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if trainer.sanity_checking:
            return
        value = trainer.callback_metrics.get(self.monitor)
        if value is None or not math.isfinite(float(value)):
            return
        self.trial.report(float(value), step=trainer.current_epoch)
        if self.trial.should_prune():
            trainer.should_stop = True
            pl_module._zoo_pruned = True  # read back by the objective: the trial ends as PRUNED


def _fit_trial(args: list[str], run_dir: Path, trial: Any, metric: tuple[str, str] | None) -> tuple[float, bool]:
    """Fit one trial's config; (its validation score, whether it was pruned)."""
    from zoo.callbacks.best_metric import BestMetric
    from zoo.cli.lightning_cli import ZooCLI

    argv, sys.argv = sys.argv, sys.argv[:1]
    try:
        cli = ZooCLI(args=[*args, "--trainer.default_root_dir", str(run_dir)], run=False)
    finally:
        sys.argv = argv
    trainer, model = cli.trainer, cli.model
    monitor = getattr(model, "checkpoint_monitor", None)
    name = monitor or (metric[0] if metric else None)
    if name is None:
        raise ConfigError(
            f"{type(model).__name__} names no validation metric (checkpoint_monitor) and the task declares no "
            "tune_metric: there is nothing to tune on without looking at test data"
        )
    if monitor:
        trainer.callbacks.append(_PruneOnValidation(trial, monitor))
    trainer.fit(model, datamodule=cli.datamodule, weights_only=True)
    if monitor and not trainer.val_dataloaders:
        raise NoValidationData(
            f"{type(cli.datamodule).__name__} gave no validation data: tuning scores trials on {monitor} and never "
            "on the test set; give the row a validation split (a datamodule option such as num_val_bags / val_ratio)"
        )
    best = next((cb.best for cb in trainer.callbacks if isinstance(cb, BestMetric)), None) if monitor else None
    if best is None:
        last = trainer.callback_metrics.get(name)
        best = float(last) if last is not None else float("nan")
    return float(best), bool(getattr(model, "_zoo_pruned", False))


def direction_of(args: list[str], metric: tuple[str, str] | None, probe: Path) -> tuple[str, str]:
    """(metric name, "maximize" | "minimize") of the model the args build (in a scratch folder ``probe``), without
    fitting it; a config the model refuses (e.g. a router that cannot route its mixture) raises ConfigError."""
    from zoo.cli.lightning_cli import ZooCLI

    argv, sys.argv = sys.argv, sys.argv[:1]
    try:
        cli = ZooCLI(args=[*args, "--trainer.logger=false", "--trainer.default_root_dir", str(probe)], run=False)
    finally:
        sys.argv = argv
        shutil.rmtree(probe, ignore_errors=True)
    monitor = getattr(cli.model, "checkpoint_monitor", None)
    if monitor:
        mode = getattr(cli.model, "checkpoint_mode", "min")
        return monitor, "maximize" if mode == "max" else "minimize"
    if metric:
        return metric[0], "maximize" if metric[1] == "max" else "minimize"
    raise ConfigError(f"{type(cli.model).__name__} names no validation metric to tune on")


def run_study(
    base_args: Sequence[str],
    space: SearchSpace,
    folder: Path,
    trials: int,
    seed: int = 0,
    metric: tuple[str, str] | None = None,
    keep_checkpoints: bool = False,
) -> TuneResult:
    """Search ``space`` for ``trials`` finished trials (resuming the study in ``folder``); the best values.

    ``base_args``: the row's ``zoo fit`` arguments with the tuning seed. ``metric``: (name, "max"|"min") for
    models without a ``checkpoint_monitor``. Trial folders are ``folder/trial<N>``; their checkpoints are deleted
    after each trial unless ``keep_checkpoints`` (a study of 50 fits would otherwise keep 50 models on disk).
    """
    import optuna
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend
    from optuna.trial import TrialState

    if not space:
        raise ConfigError("the search space is empty: the task declares nothing to tune for this row")
    folder.mkdir(parents=True, exist_ok=True)
    name, direction = direction_of(list(base_args), metric, folder / "probe")
    storage = JournalStorage(JournalFileBackend(str(folder / STUDY_FILE)))
    study = optuna.create_study(
        study_name="zoo",
        storage=storage,
        load_if_exists=True,
        direction=direction,
        sampler=optuna.samplers.TPESampler(seed=seed),
        pruner=optuna.pruners.MedianPruner(n_startup_trials=5, n_warmup_steps=3),
    )
    for stale in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        # a killed zoo tune left it running (one process per study: zoo.runner.tuning holds a lock)
        storage.set_trial_state_values(stale._trial_id, TrialState.FAIL)  # as optuna.storages.fail_stale_trials does
    finished = (TrialState.COMPLETE, TrialState.PRUNED)

    def objective(trial: optuna.Trial) -> float:
        from zoo.runner.stop_signal import stop_if_asked

        stop_if_asked(f"trial {trial.number} of {folder}")
        params = suggest(trial, space)
        run_dir = folder / f"trial{trial.number}"
        if run_dir.exists():
            shutil.rmtree(run_dir)  # a trial number is reused only after a failure: start it clean
        value, pruned = _fit_trial([*base_args, *as_overrides(params)], run_dir, trial, metric)
        if not keep_checkpoints:
            shutil.rmtree(run_dir / "checkpoints", ignore_errors=True)
        if not math.isfinite(value):
            raise ConfigError(f"trial {trial.number}: no finite {name} (params {params})")
        if pruned:
            raise optuna.TrialPruned()
        return value

    while (done := len(study.get_trials(deepcopy=False, states=finished))) < trials:
        study.optimize(objective, n_trials=trials - done, catch=(ConfigError,), gc_after_trial=True)
        if all(t.state == TrialState.FAIL for t in study.trials[-(trials - done) :]):
            raise ConfigError(f"{folder}: every trial failed; see the trial folders")
    ended = study.get_trials(deepcopy=False, states=finished)
    if not any(t.state == TrialState.COMPLETE for t in ended):
        raise ConfigError(f"{folder}: no trial completed (all pruned); raise the budget or the warm-up")
    result = _best_of(study, ended, space, name, direction, seed, folder)
    (folder / BEST_FILE).write_text(json.dumps(result.to_dict(), indent=1) + "\n")
    return result


def _best_of(study, ended: list, space: SearchSpace, name: str, direction: str, seed: int, folder: Path) -> TuneResult:
    """The study's best trial as a ``TuneResult``, with every finished trial's value and wall time."""
    from optuna.trial import TrialState

    best = study.best_trial
    return TuneResult(
        params=dict(best.params),
        overrides=as_overrides(best.params),
        value=float(best.value),
        metric=name,
        direction=direction,
        trials=len(ended),
        pruned=sum(t.state == TrialState.PRUNED for t in ended),
        space=describe(space),
        seed=seed,
        study=str(folder / STUDY_FILE),
        trial_values=[t.value for t in ended],
        trial_wall_s=[
            (t.datetime_complete - t.datetime_start).total_seconds()
            for t in ended
            if t.datetime_start is not None and t.datetime_complete is not None
        ],
    )


def recorded_choice(extra: Mapping[str, Any] | None) -> TuneResult | None:
    """The study choice a run record's ``extra["tuning"]`` holds; None when it holds none or was written by another
    version of ``TuneResult`` (its fields differ), so that the caller tunes again or refuses."""
    tuning = (extra or {}).get("tuning")
    if not tuning:
        return None
    try:
        return TuneResult(**tuning)
    except TypeError:
        return None


def read_best(folder: Path) -> TuneResult | None:
    """A finished study's choice (``best.json``), or None."""
    try:
        data: Mapping[str, Any] = json.loads((folder / BEST_FILE).read_text())
    except (OSError, ValueError):
        return None
    return TuneResult(**data)
