"""The probe worker: run as a script (``python probe_worker.py JOB.json OUT.jsonl``) with ``PYTHONPATH`` on a shim of
one commit's tree; writes one JSON line per group of the job. HEAD's copy of this file probes every commit, so it
imports nothing from ``zoo`` but ``zoo.cli.lightning_cli.ZooCLI`` (built as ``zoo.cli.fit_test.fit_and_test``
builds it), and otherwise only torch, Lightning and yaml: APIs that the record commits have as well.

What one probe holds (``probe_group``), all from the record's own config, seed and threads:

* ``overrides`` / ``inputs``: the task's probe overrides (``TaskSpec.probe_overrides``), added to the short fit's
  arguments / to the arguments of every part (the schedule trace too: stand-ins for another run's outputs);
* ``short``: a short fit (``STEPS`` optimiser steps in one epoch of ``STEPS`` batches, trainer otherwise as
  configured; a module that optimises by hand runs until its ``STEPS``-th step): every training batch's
  loss, its logged scalars and a hash of the batch, then a hash of every parameter / buffer and of the optimisers'
  state; validation and test on ``EVAL_BATCHES`` batches each (the test from a checkpoint saved here when the model
  names a checkpoint monitor, as ``fit_and_test`` tests the best one); ``extra_results()``; the routing statistics
  the run wrote (``routing_summary.json``);
* ``schedule``: the full-length run's optimisers and LR schedulers built by its own trainer (``configure_optimizers``
  sees the full ``estimated_stepping_batches``), every scheduler stepped through the whole run without training
  and every learning rate recorded, plus each callback's settings;
* ``splits``: for every (seed, fold) of the group, a hash of the datamodule's state after ``setup`` (split
  indices, in-memory data).

Values that measure time (keys such as ``*_s``, ``time``, ``per_s``) are left out; paths under the work folder are
written relative to it, so two workers of two commits write the same JSON for the same behaviour.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import re
import shutil
import sys
import time
import traceback
import warnings
from pathlib import Path

STEPS = 3  # optimiser steps of the short fit
EVAL_BATCHES = 2  # validation / test batches of the short fit
MAX_SCHEDULE_STEPS = 5_000_000  # scheduler steps traced at most (longer schedules are cut, and say so)
MAX_KEPT = 200  # entries kept readable in the probe (all of them enter its hash)
SMALL = 16  # tensors with at most this many elements are written out, larger ones hashed
TIME_KEY = re.compile(
    r"(^|[/_.])(time|times|start|started|stamp|clock|seconds|wall|elapsed|duration|speed|throughput|fps|per_s)"
    r"([/_.]|$)|_s$"
)


class TraceDone(Exception):
    """Ends the schedule trace's fit once the optimisers and schedulers exist."""


# ------------------------------------------------------------------------------------------------ canonical values
class Plain:
    """Turns probe values into JSON-able, canonical ones: tensors and arrays as dtype, shape and values (small) or
    sha256 (large), objects as their type name, strings with the work folder replaced by ``<work>``."""

    def __init__(self, work: Path, tree: Path):
        self.places = [(str(work), "<work>"), (str(tree), "<tree>")]

    def text(self, value: str) -> str:
        for place, name in self.places:
            value = value.replace(place, name)
        return value

    def __call__(self, value, depth: int = 0):
        import numpy as np
        import torch

        if value is None or isinstance(value, bool | int):
            return value
        if isinstance(value, float):
            return value if math.isfinite(value) else repr(value)
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Path):
            return self.text(str(value))
        if isinstance(value, np.generic):
            return self(value.item(), depth)
        if isinstance(value, torch.Tensor | np.ndarray):
            return tensor_summary(value)
        if depth > 12:
            return f"<{type(value).__name__}>"
        if isinstance(value, dict):
            return {str(k): self(v, depth + 1) for k, v in value.items() if not TIME_KEY.search(str(k))}
        if isinstance(value, list | tuple):
            return [self(v, depth + 1) for v in value]
        if hasattr(value, "__dataclass_fields__"):
            return {f: self(getattr(value, f), depth + 1) for f in value.__dataclass_fields__}
        return f"<{type(value).__module__}.{type(value).__qualname__}>"


def tensor_summary(value) -> dict:
    """dtype, shape and either the values (small) or the sha256 of the bytes."""
    import numpy as np
    import torch

    if isinstance(value, torch.Tensor):
        value = value.detach().cpu()
        if value.layout != torch.strided:
            value = value.to_dense()
        dtype, shape = str(value.dtype), list(value.shape)
        if value.dtype == torch.bfloat16:
            value = value.float()
        array = value.contiguous().numpy()
    else:
        array, dtype, shape = value, str(value.dtype), list(value.shape)
    if array.dtype == object:
        return {"dtype": dtype, "shape": shape, "repr": hashlib.sha256(repr(array.tolist()).encode()).hexdigest()}
    if array.size <= SMALL:
        return {"dtype": dtype, "shape": shape, "values": [repr(v) for v in array.reshape(-1).tolist()]}
    data = np.ascontiguousarray(array).tobytes()
    return {"dtype": dtype, "shape": shape, "sha256": hashlib.sha256(data).hexdigest()}


def digest(value) -> str:
    """sha256 of a canonical JSON value."""
    return hashlib.sha256(json.dumps(value, sort_keys=True, allow_nan=True).encode()).hexdigest()


def state_hash(state: dict) -> str:
    """sha256 over the (name, dtype, shape, bytes) of every tensor of a state dict, nested dicts and lists too."""
    out = hashlib.sha256()

    def add(prefix: str, value) -> None:
        import torch

        if isinstance(value, dict):
            for key in sorted(value, key=str):
                add(f"{prefix}.{key}", value[key])
        elif isinstance(value, list | tuple):
            for i, item in enumerate(value):
                add(f"{prefix}[{i}]", item)
        elif isinstance(value, torch.Tensor):
            out.update(f"{prefix}:{json.dumps(tensor_summary(value), sort_keys=True)}".encode())
        else:
            out.update(f"{prefix}={value!r}".encode())

    add("", state)
    return out.hexdigest()


class ObjectHash:
    """sha256 over an object graph: tensors and arrays by content, containers by their items, other objects by
    their type and attributes (``vars``); the trainer, modules, functions and classes are not entered.

    ``content_only`` (the data splits' fingerprint) keeps the numbers alone -- tensors, arrays, ints and floats in
    the order of the sorted attribute names -- and leaves out names, types, strings, flags and None: a datamodule
    that gained a setting or a helper attribute but holds the same split indices and data fingerprints the same;
    any change of an index, a value or a count does not."""

    SKIP = {"trainer", "_trainer", "_hparams_initial", "_log_hyperparams"}

    def __init__(self, plain: Plain, max_depth: int = 8, content_only: bool = False):
        self.plain, self.max_depth, self.content_only = plain, max_depth, content_only

    def __call__(self, value) -> str:
        out = hashlib.sha256()
        self._add(out, value, 0, set())
        return out.hexdigest()

    def _add(self, out, value, depth: int, seen: set) -> None:
        import types

        import numpy as np
        import torch

        if value is None or isinstance(value, bool | str | bytes | Path):
            if not self.content_only:
                out.update(repr(self.plain(value) if isinstance(value, str | Path) else value).encode())
            return
        if isinstance(value, int | float):
            out.update(repr(value).encode())
            return
        if isinstance(value, torch.Tensor | np.ndarray):
            out.update(json.dumps(tensor_summary(value), sort_keys=True).encode())
            return
        if isinstance(value, torch.Generator):
            out.update(json.dumps(tensor_summary(value.get_state())).encode())
            return
        if not self.content_only:
            out.update(f"<{type(value).__module__}.{type(value).__qualname__}>".encode())
        if depth >= self.max_depth or id(value) in seen:
            return
        if isinstance(value, types.ModuleType | types.FunctionType | types.MethodType | type | torch.nn.Module):
            return
        seen.add(id(value))
        if isinstance(value, dict):
            for key in sorted(value, key=repr):
                if not self.content_only:
                    out.update(repr(key).encode())
                self._add(out, value[key], depth + 1, seen)
        elif isinstance(value, list | tuple):
            for item in value:
                self._add(out, item, depth + 1, seen)
        elif isinstance(value, set | frozenset):
            for item in sorted(value, key=repr):
                self._add(out, item, depth + 1, seen)
        elif hasattr(value, "to_numpy") and type(value).__module__.startswith("pandas"):
            self._add(out, value.to_numpy(), depth + 1, seen)
            out.update(repr(list(getattr(value, "columns", []))).encode())
        else:
            try:
                attributes = vars(value)
            except TypeError:
                return
            for key in sorted(attributes):
                if key not in self.SKIP and not TIME_KEY.search(key):
                    if not self.content_only:
                        out.update(key.encode())
                    self._add(out, attributes[key], depth + 1, seen)


def scalars(metrics: dict, plain: Plain) -> dict:
    """The scalar entries of a metrics dict (``trainer.callback_metrics``), exact, time-like keys left out."""
    out = {}
    for key, value in sorted(metrics.items()):
        if TIME_KEY.search(key):
            continue
        number = value.detach().cpu() if hasattr(value, "detach") else value
        if hasattr(number, "numel") and number.numel() != 1:
            out[key] = plain(number)
        else:
            out[key] = repr(float(number))
    return out


class Kept:
    """A sequence of entries: all enter ``sha256``, the first ``MAX_KEPT`` stay readable."""

    def __init__(self):
        self.hash, self.count, self.first = hashlib.sha256(), 0, []

    def add(self, entry) -> None:
        self.hash.update(json.dumps(entry, sort_keys=True, allow_nan=True).encode())
        self.count += 1
        if len(self.first) < MAX_KEPT:
            self.first.append(entry)

    def to_dict(self) -> dict:
        return {"count": self.count, "sha256": self.hash.hexdigest(), "first": self.first}


# ------------------------------------------------------------------------------------------------ building the run
def build_cli(config: dict, run_dir: Path, overrides: list[str]):
    """``ZooCLI(run=False)`` from the record's config (dumped to YAML) as ``fit_and_test`` builds it: run folder
    ``run_dir`` and ``overrides`` after the config."""
    from zoo.cli.lightning_cli import ZooCLI

    run_dir.mkdir(parents=True, exist_ok=True)
    config = copy.deepcopy(config)
    config.get("trainer", {}).pop("default_root_dir", None)
    path = run_dir.parent / f"{run_dir.name}.yaml"
    path.write_text(_yaml().safe_dump(config, sort_keys=True))
    args = ["--config", str(path), *overrides, "--trainer.default_root_dir", str(run_dir)]
    argv, sys.argv = sys.argv, sys.argv[:1]
    try:
        return ZooCLI(args=args, run=False)
    finally:
        sys.argv = argv


def _yaml():
    import yaml

    return yaml


def _step_callback(plain: Plain, hasher: ObjectHash):
    import pytorch_lightning as pl

    class StepRecorder(pl.Callback):
        """Each training batch: global step, loss, logged scalars and a hash of the batch."""

        def __init__(self):
            self.steps = Kept()

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
            loss = outputs.get("loss") if isinstance(outputs, dict) else outputs
            self.steps.add(
                {
                    "batch": batch_idx,
                    "step": trainer.global_step,
                    "loss": None if loss is None else plain(loss),
                    "metrics": scalars(trainer.callback_metrics, plain),
                    "data": hasher(batch),
                }
            )

    return StepRecorder()


def short_run(config: dict, run_dir: Path, plain: Plain, hasher: ObjectHash, extra: list[str] = ()) -> dict:
    """A few optimiser steps of the record's run, then validation and test on a few batches; ``extra`` are the
    task's probe overrides, after the probe's own (so they may lift ``--trainer.max_steps`` for a run whose test
    needs a finished sequence)."""
    from pytorch_lightning.utilities.model_helpers import is_overridden

    overrides = [
        *("--trainer.max_steps", str(STEPS)),
        *("--trainer.limit_val_batches", str(EVAL_BATCHES)),
        *("--trainer.limit_test_batches", str(EVAL_BATCHES)),
        *("--trainer.log_every_n_steps", "1"),
        *("--trainer.num_sanity_val_steps", "0"),  # the same validation code runs below, on the trained weights
        *extra,
    ]
    cli = build_cli(config, run_dir, overrides)
    trainer, model, data = cli.trainer, cli.model, cli.datamodule
    if model.automatic_optimization:
        # one short epoch, so that its end runs as in the record's run: validation, then the epoch-end hooks that
        # read its metrics (early stopping, checkpointing, epoch-interval schedulers). A module that optimises by
        # hand (the RL agents) counts optimiser steps, not batches: its batches are not limited, its steps are.
        trainer.limit_train_batches = STEPS
    recorder = _step_callback(plain, hasher)
    trainer.callbacks.append(recorder)
    trainer.fit(model, datamodule=data)
    out = {
        "steps": recorder.steps.to_dict(),
        "global_step": trainer.global_step,
        "epoch": trainer.current_epoch,
        "fit_metrics": scalars(trainer.callback_metrics, plain),
        "parameters": state_hash(model.state_dict()),
        "optimizers": [state_hash(opt.state_dict()) for opt in trainer.optimizers],
    }
    if is_overridden("validation_step", model) and _has_loader(data, "val_dataloader"):
        out["validate"] = plain(trainer.validate(model, datamodule=data, verbose=False))
    if is_overridden("test_step", model) and _has_loader(data, "test_dataloader"):
        out["test"] = plain(trainer.test(model, datamodule=data, verbose=False, **_tested_weights(trainer, model)))
    out["extra"] = plain(model.extra_results()) if hasattr(model, "extra_results") else None
    summary = Path(trainer.log_dir or trainer.default_root_dir) / "routing_summary.json"
    out["routing"] = plain(json.loads(summary.read_text())) if summary.is_file() else None
    return out


def _tested_weights(trainer, model) -> dict:
    """``trainer.test`` arguments that test the weights the way ``fit_and_test`` does: a model that names a
    checkpoint monitor is tested from a checkpoint (saved here, so the save / load hooks run), else in memory."""
    if not getattr(model, "checkpoint_monitor", None):
        return {}
    path = Path(trainer.default_root_dir) / "probe.ckpt"
    trainer.save_checkpoint(path)
    return {"ckpt_path": str(path), "weights_only": True}


def _has_loader(datamodule, name: str) -> bool:
    from pytorch_lightning.utilities.model_helpers import is_overridden

    return datamodule is not None and is_overridden(name, datamodule)


# ------------------------------------------------------------------------------------------------ schedule trace
def _trace_callback(plain: Plain):
    import pytorch_lightning as pl

    class ScheduleTracer(pl.Callback):
        """At ``on_fit_start`` of the full-length run: its optimisers, schedulers and callbacks; then stops it."""

        def __init__(self):
            self.trace: dict = {}

        def on_fit_start(self, trainer, pl_module):
            total = trainer.estimated_stepping_batches
            self.trace = {
                "estimated_stepping_batches": plain(float(total)),
                "num_training_batches": plain(float(trainer.num_training_batches)),
                "max_epochs": trainer.max_epochs,
                "max_steps": trainer.max_steps,
                "optimizers": [describe_optimizer(opt, plain) for opt in trainer.optimizers],
                "callbacks": [describe_callback(cb, plain) for cb in trainer.callbacks if cb is not self],
                "schedulers": [
                    trace_scheduler(cfg, trainer.optimizers, total, trainer, plain)
                    for cfg in trainer.lr_scheduler_configs
                ],
            }
            raise TraceDone

    return ScheduleTracer()


def describe_optimizer(optimizer, plain: Plain) -> dict:
    groups = [{k: plain(v) for k, v in group.items() if k != "params"} for group in optimizer.param_groups]
    sizes = [[list(p.shape) for p in group["params"]] for group in optimizer.param_groups]
    return {"class": type(optimizer).__qualname__, "groups": groups, "param_shapes": sizes}


def describe_callback(callback, plain: Plain) -> dict:
    """A callback's class and its plain settings (numbers, strings, flags and lists of them). Private float
    attributes are left out: they hold clock readings (a periodic checkpoint's last save, a start time)."""
    settings = {}
    for key, value in sorted(vars(callback).items()):
        if TIME_KEY.search(key) or (key.startswith("_") and isinstance(value, float)):
            continue
        if value is None or isinstance(value, bool | int | float | str | Path):
            settings[key] = plain(value)
        elif isinstance(value, list | tuple) and all(isinstance(v, bool | int | float | str) for v in value):
            settings[key] = plain(list(value))
    return {"class": f"{type(callback).__module__}.{type(callback).__qualname__}", "settings": settings}


def trace_scheduler(config, optimizers, total, trainer, plain: Plain) -> dict:
    """Step one scheduler through the full run (``interval`` "step": ``estimated_stepping_batches`` / frequency
    steps; "epoch": the run's epochs / frequency) and record every optimiser's learning rates after each step.
    ``ReduceLROnPlateau`` follows a monitored metric, which needs training: its settings are recorded instead."""
    scheduler = config.scheduler
    out = {
        "class": f"{type(scheduler).__module__}.{type(scheduler).__qualname__}",
        "interval": config.interval,
        "frequency": config.frequency,
        "monitor": config.monitor,
    }
    if getattr(config, "reduce_on_plateau", False):
        out["settings"] = plain({k: v for k, v in scheduler.state_dict().items() if k != "_last_lr"})
        return out
    if config.interval == "step":
        count = total
    else:
        epochs = trainer.max_epochs
        if epochs is None or epochs < 0:
            batches = trainer.num_training_batches
            epochs = math.ceil(total / batches) if math.isfinite(total) and batches else float("inf")
        count = epochs
    if not math.isfinite(count):
        out["steps"] = "unbounded"
        return out
    steps = int(count) // max(1, int(config.frequency))
    out["steps"] = steps
    out["cut_at"] = MAX_SCHEDULE_STEPS if steps > MAX_SCHEDULE_STEPS else None
    rates, previous = Kept(), None
    lrs = hashlib.sha256()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i in range(min(steps, MAX_SCHEDULE_STEPS)):
            scheduler.step()
            now = [[group["lr"] for group in opt.param_groups] for opt in optimizers]
            lrs.update(repr(now).encode())
            if now != previous:  # the readable part: where the rates change
                rates.add([i + 1, [[repr(v) for v in row] for row in now]])
                previous = now
    out["lr_sha256"] = lrs.hexdigest()
    out["changes"] = rates.to_dict()
    return out


def schedule_trace(config: dict, run_dir: Path, plain: Plain, inputs: list[str] = ()) -> dict:
    """The full-length run's optimisers, LR schedule and callbacks (``ScheduleTracer``), without training; ``inputs``:
    the task's stand-ins for another run's outputs."""
    cli = build_cli(config, run_dir, list(inputs))
    tracer = _trace_callback(plain)
    cli.trainer.callbacks.append(tracer)
    try:
        cli.trainer.fit(cli.model, datamodule=cli.datamodule)
    except TraceDone:
        pass
    if not tracer.trace:
        raise RuntimeError("the full-length fit ended before on_fit_start: no schedule traced")
    return tracer.trace


# ------------------------------------------------------------------------------------------------ data splits
def split_hashes(config: dict, runs: list, hasher: ObjectHash) -> list:
    """For every (seed, fold): the datamodule of the config (that seed and fold) after ``prepare_data`` and
    ``setup("fit")`` / ``setup("test")``, hashed by content (its split indices and in-memory data, ``content_only``)."""
    import pytorch_lightning as pl
    from pytorch_lightning.cli import LightningArgumentParser

    out = []
    for seed, fold in runs:
        data = copy.deepcopy(config["data"])
        if fold is not None:
            data.setdefault("init_args", {})["fold"] = fold
        pl.seed_everything(seed, verbose=False)
        parser = LightningArgumentParser(exit_on_error=False)
        parser.add_lightning_class_args(pl.LightningDataModule, "data", subclass_mode=True)
        datamodule = parser.instantiate_classes(parser.parse_object({"data": data})).data
        datamodule.prepare_data()
        datamodule.setup("fit")
        datamodule.setup("test")
        out.append([seed, fold, hasher(datamodule)])
    return out


# ------------------------------------------------------------------------------------------------ one group
def probe_group(group: dict, work: Path, tree: Path) -> dict:
    """The probe of one group (see the module docstring) and its sha256, or the error that stopped it."""
    import torch

    start = time.perf_counter()
    run_root = work / "run"
    shutil.rmtree(run_root, ignore_errors=True)
    plain = Plain(work, tree)
    hasher = ObjectHash(plain)
    if group.get("threads"):
        torch.set_num_threads(int(group["threads"]))
    seconds = {}
    short, inputs = list(group.get("overrides") or []), list(group.get("inputs") or [])

    def timed(name, fn, *args):
        begin = time.perf_counter()
        try:
            return fn(*args)
        finally:
            seconds[name] = round(time.perf_counter() - begin, 2)

    try:
        probe = {
            "threads": torch.get_num_threads(),
            "overrides": list(group.get("overrides") or []),
            "inputs": list(group.get("inputs") or []),
            "short": timed("short", short_run, group["config"], run_root / "short", plain, hasher, [*inputs, *short]),
            "schedule": timed("schedule", schedule_trace, group["config"], run_root / "trace", plain, inputs),
            "splits": timed(
                "splits", split_hashes, group["config"], group["runs"], ObjectHash(plain, content_only=True)
            ),
        }
        text = json.dumps(probe, sort_keys=True, allow_nan=True)
        probe = json.loads(text)  # canonical: what the hash covers is what the JSON line holds
        result = {"probe": probe, "probe_hash": hashlib.sha256(text.encode()).hexdigest()}
    except Exception as exc:  # noqa: BLE001 - one group's failure is its result; the worker goes on
        lines = str(exc).strip().splitlines() or [""]
        result = {"error": f"{type(exc).__name__}: {lines[0]}", "traceback": traceback.format_exc()[-4000:]}
    shutil.rmtree(run_root, ignore_errors=True)
    seconds["total"] = round(time.perf_counter() - start, 2)
    return {"id": group["id"], "seconds": seconds, **result}


def check_imports(tree: Path) -> None:
    """Exit loudly unless ``zoo`` and the task plugins' top-level packages (their ``zoo.tasks`` entry points) are
    imported from ``tree`` (not from an installed copy)."""
    import importlib
    from importlib.metadata import entry_points

    plugins = {ep.value.partition(":")[0].split(".")[0] for ep in entry_points(group="zoo.tasks")}
    for name in ("zoo", *sorted(plugins - {"zoo"})):
        try:
            module = importlib.import_module(name)
        except ImportError:
            if name == "zoo":
                raise
            continue
        where = Path(module.__file__).resolve()
        if not where.is_relative_to(tree):
            sys.exit(f"probe worker: {name} was imported from {where}, not from the tree {tree}: refusing to probe")


def main(argv: list[str]) -> int:
    job = json.loads(Path(argv[1]).read_text())
    out, work, tree = Path(argv[2]), Path(job["work"]).resolve(), Path(job["tree"]).resolve()
    check_imports(tree)
    for group in job["groups"]:
        result = probe_group(group, work, tree)
        with out.open("a") as fh:
            fh.write(json.dumps(result, sort_keys=True, allow_nan=True) + "\n")
        print(f"probe {group['id']}: {result.get('error') or result['probe_hash'][:12]}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
