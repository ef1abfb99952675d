"""`ZooCLI`: LightningCLI with the project's defaults: any registered LightningModule / LightningDataModule by
``class_path``, a folder of its own per run, checkpoints written atomically that resume only the run they belong
to, a NaN guard, RNG state in checkpoints, run metadata, routing stats for MoE layers, ``weights_only=True``
checkpoint loading, short config errors and a summary at the end of every fit."""

from __future__ import annotations

import importlib
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import pytorch_lightning as pl
from lightning_fabric.utilities.exceptions import MisconfigurationException
from pytorch_lightning.callbacks import ModelCheckpoint, ProgressBar
from pytorch_lightning.cli import LightningCLI

from zoo.callbacks.atomic_checkpoint import AtomicModelCheckpoint
from zoo.callbacks.best_metric import BestMetric
from zoo.callbacks.nan_guard import NaNGuard
from zoo.callbacks.progress_bar import ResumableProgressBar
from zoo.callbacks.rng_state import RNGStateCheckpoint
from zoo.callbacks.run_identity import IDENTITY_KEY, RunIdentity
from zoo.callbacks.run_metadata import RunMetadata
from zoo.cli import run_dir as runs
from zoo.cli.checkpoint_check import check_identity, check_state_dict, load_checkpoint, run_identity
from zoo.cli.config_errors import ZooArgumentParser, user_error_in
from zoo.cli.dataset_name import name_user_dataset
from zoo.cli.model_shapes import data_shapes, fill_model_shapes
from zoo.cli.quiet import quiet_third_party
from zoo.cli.settings_check import check_fit_length, check_learning_rates, check_more_to_train
from zoo.cli.summary import fit_summary
from zoo.errors import ConfigError

EVALUATE = ("validate", "test", "predict")
# `--ckpt_path none`: evaluate the model as built, without weights from a checkpoint (said loudly)
UNTRAINED = "none"


def _routing_stats_callback() -> list[pl.Callback]:
    try:
        from zoo.callbacks.routing_stats import RoutingStatsCallback
    except ImportError:
        return []
    return [RoutingStatsCallback()]


def _rank_zero() -> bool:
    return os.environ.get("LOCAL_RANK", "0") == "0" and os.environ.get("NODE_RANK", "0") == "0"


def _say(message: str, err: bool = False) -> None:
    if _rank_zero():
        print(message, file=sys.stderr if err else sys.stdout, flush=True)


LOGS = "lightning_logs"


def _version_dirs(root: Path) -> set[Path]:
    return set((root / LOGS).glob("version_*"))


def _missing_dirs(root: Path) -> list[Path]:
    """``root``'s folders that do not exist yet, deepest first, and the log and checkpoint folders inside it."""
    missing = [d for d in (root / LOGS, root / runs.CHECKPOINTS) if not d.exists()]
    for folder in (root, *root.parents):
        if folder.exists():
            break
        missing.append(folder)
    return missing


def _trains_nothing(model: Any) -> bool:
    """Whether the configured model class declares ``trains_nothing = True``: a baseline that is fitted with
    ``max_epochs: 0`` and only tested (EdgeBank), for which a fit of 0 epochs is what it means."""
    path = model.get("class_path") if hasattr(model, "get") else None
    module, _, name = str(path or "").rpartition(".")
    try:
        cls = getattr(importlib.import_module(module), name) if module else None
    except ImportError:
        return False
    return bool(getattr(cls, "trains_nothing", False))


class ZooCLI(LightningCLI):
    """The ``zoo fit|validate|test|predict`` command (see ``zoo --help``).

    Each run gets its own folder, ``runs/<config>/<YYYYmmdd-HHMMSS>`` under the working directory (printed at
    start and end), unless ``--trainer.default_root_dir`` names one. Checkpoints go to ``<run>/checkpoints``
    (``last.ckpt`` every epoch, plus the best one when the module names a ``checkpoint_monitor``).
    ``--ckpt_path last`` resumes the newest run of the same config (or ``<default_root_dir>/checkpoints/last.ckpt``)
    and refuses a checkpoint whose model class or data settings differ from this run's. ``validate``/``test``/
    ``predict`` need a checkpoint (a file, ``best`` or ``last``); ``--ckpt_path none`` evaluates the untrained model.
    A module may set ``test_after_fit = True`` to be tested on its best checkpoint right after fitting (for
    cheap test sets); otherwise the summary prints the ``zoo test`` command.
    """

    def __init__(self, args: list[str] | None = None, run: bool = True, **kwargs: Any) -> None:
        quiet_third_party()
        kwargs.setdefault("save_config_kwargs", {"overwrite": True})
        kwargs.setdefault("parser_kwargs", {"prog": "zoo"})
        kwargs.setdefault("parser_class", ZooArgumentParser)
        self._root: Path | None = None
        self._created: Path | None = None  # the run folder this process made (removed again if the start fails)
        self._versions_before: set[Path] = set()
        self._missing_before: list[Path] = []  # folders a failed start made and leaves behind empty: removed again
        self._set_env = False
        self._ckpt_shapes: tuple[Path, dict] | None = None
        self._run_key = ""
        self._start = time.perf_counter()
        try:
            super().__init__(
                pl.LightningModule,
                pl.LightningDataModule,
                subclass_mode_model=True,
                subclass_mode_data=True,
                args=args,
                run=run,
                auto_configure_optimizers=True,
                **kwargs,
            )
        except BaseException:
            self._clean_failed_start()
            raise
        finally:
            if self._set_env:
                os.environ.pop(runs.RUN_DIR_ENV, None)

    # -- the settings, checked before anything is built ------------------------------------------------------
    def parse_arguments(self, parser: Any, args: Any) -> None:
        super().parse_arguments(parser, args)
        subcommand = self.config.get("subcommand")
        config = self.config[subcommand] if subcommand else self.config
        if config.get("data") is not None:
            name_user_dataset(config.data)
        if subcommand in (None, "fit"):  # without a subcommand (`run=False`), the caller fits (zoo reproduce)
            self._check_fit_settings(config)

    @staticmethod
    def _check_fit_settings(config: Any) -> None:
        """One line, before any folder is made, for settings a fit cannot run with."""
        model, optimizer = config.get("model"), config.get("optimizer")
        if hasattr(model, "get"):
            check_learning_rates(model.get("init_args"), "model.init_args")
        if hasattr(optimizer, "get"):
            check_learning_rates(optimizer.get("init_args"), "optimizer.init_args")
        if config.get("trainer") is not None and not _trains_nothing(model):
            check_fit_length(config.trainer)

    # -- where the run writes and what it resumes ------------------------------------------------------------
    def _parse_ckpt_path(self) -> None:
        subcommand = self.config.get("subcommand")
        if not subcommand:
            return
        config = self.config[subcommand]
        model = config.get("model")
        model_class = model.get("class_path") if hasattr(model, "get") else None
        self._run_key = runs.run_key([str(c) for c in (config.get("config") or [])], model_class)
        root = config.trainer.get("default_root_dir")
        if root is None and os.environ.get(runs.RUN_DIR_ENV):
            root = os.environ[runs.RUN_DIR_ENV]  # a DDP worker: the folder its launcher picked
        ckpt = self._resolve_checkpoint(subcommand, config.get("ckpt_path"), Path(root) if root else None)
        if ckpt is not None:
            loaded = load_checkpoint(ckpt)
            check_identity(loaded.get(IDENTITY_KEY), run_identity(config, self._run_key), ckpt, subcommand == "fit")
            if subcommand == "fit":
                check_more_to_train(loaded, config.trainer, Path(runs.shown(ckpt)), config.get("config") or [])
            shapes = {k: tuple(v.shape) for k, v in loaded["state_dict"].items() if hasattr(v, "shape")}
            self._ckpt_shapes = (ckpt, shapes)
            del loaded
            if root is None:
                root = runs.run_of_checkpoint(ckpt)
        config.ckpt_path = str(ckpt) if ckpt is not None else None
        if root is None:
            root = runs.new_run_dir(self._run_key)
            self._created = root
        if not os.environ.get(runs.RUN_DIR_ENV):
            os.environ[runs.RUN_DIR_ENV], self._set_env = str(root), True
        self._root = Path(root)
        config.trainer.default_root_dir = str(root)
        self._missing_before = _missing_dirs(self._root)
        runs.ensure_writable(self._root)
        self._versions_before = _version_dirs(self._root)
        _say(f"zoo: run folder {runs.shown(self._root)}")
        super()._parse_ckpt_path()

    def _resolve_checkpoint(self, subcommand: str, ckpt: Any, root: Path | None) -> Path | None:
        """The checkpoint file ``--ckpt_path`` means here, or None to start from the model as built."""
        where = f"{root / runs.CHECKPOINTS}" if root else f"runs/{self._run_key}/*/{runs.CHECKPOINTS}"
        if subcommand == "fit":
            if ckpt != "last":
                return Path(ckpt) if ckpt else None
            found = runs.run_checkpoint(root, "last") if root else runs.newest_run_checkpoint(self._run_key, "last")
            if found is None:
                _say(f"zoo: --ckpt_path last: no last.ckpt in {where}; starting a new run")
                return None
            _say(f"zoo: resuming {runs.shown(found)} (the newest run of {self._run_key})")
            return found
        if ckpt is None:
            raise ConfigError(
                f"zoo {subcommand} needs trained weights: pass --ckpt_path FILE, `best` or `last` (of the newest run "
                f"of {self._run_key}), or `{UNTRAINED}` to evaluate the untrained model"
            )
        if ckpt == UNTRAINED:
            _say(f"zoo: WARNING: --ckpt_path {UNTRAINED}: evaluating the UNTRAINED model", err=True)
            return None
        if ckpt in ("best", "last"):
            found = runs.run_checkpoint(root, ckpt) if root else runs.newest_run_checkpoint(self._run_key, ckpt)
            if found is None:
                raise ConfigError(f"--ckpt_path {ckpt}: no {ckpt} checkpoint in {where}; train one with `zoo fit`")
            _say(f"zoo: {subcommand} with {runs.shown(found)}")
            return found
        return Path(ckpt)

    def _clean_failed_start(self) -> None:
        """A run that failed before its first training step leaves no empty log folders behind."""
        trainer = getattr(self, "trainer", None)
        if self._root is None or not _rank_zero() or (trainer is not None and trainer.global_step > 0):
            return
        if self._created is not None and not any(self._created.rglob("*.ckpt")):
            shutil.rmtree(self._created, ignore_errors=True)
            for parent in self._created.parents:  # runs/<config>/ too, when this was its only run
                if parent == Path(".") or not parent.is_dir() or any(parent.iterdir()):
                    break
                parent.rmdir()
                if parent.name == runs.RUNS.name:
                    break
            return
        for version in _version_dirs(self._root) - self._versions_before:
            shutil.rmtree(version, ignore_errors=True)
        for folder in self._missing_before:  # deepest first: a folder emptied above goes too
            if folder.is_dir() and not any(folder.iterdir()):
                folder.rmdir()

    # -- the model's shapes from the data ---------------------------------------------------------------------
    def _subconfig(self) -> Any:
        return self.config.get(str(self.subcommand), self.config) if self.subcommand else self.config

    def _instantiate_datamodule(self, data: Any) -> pl.LightningDataModule:
        """The datamodule of config node ``data`` (class_path, init_args), built alone, before the model."""
        from pytorch_lightning.cli import LightningArgumentParser

        parser = LightningArgumentParser(exit_on_error=False)
        parser.add_lightning_class_args(pl.LightningDataModule, "data", subclass_mode=True)
        try:  # Lightning's hook that stores the datamodule's hyper-parameters (for load_from_checkpoint)
            from pytorch_lightning.cli import _InstantiatorFn

            parser.add_instantiator(_InstantiatorFn(cli=self, key="data"), pl.LightningDataModule, subclasses=True)
        except (ImportError, AttributeError, TypeError):
            pass
        from jsonargparse import Namespace

        return parser.instantiate_classes(Namespace(data=data.clone())).data

    def _datamodule_with_shapes(self, config: Any) -> pl.LightningDataModule | None:
        """When the config's datamodule class has ``model_shapes()``: the datamodule (built once), after writing
        its shapes into the config's model init args (ConfigError when the config contradicts them)."""
        from jsonargparse._util import import_object

        data, model = config.get("data"), config.get("model")
        class_path = data.get("class_path") if hasattr(data, "get") else None
        if not class_path or not hasattr(model, "get"):
            return None
        try:
            data_class = import_object(class_path)
        except Exception:  # noqa: BLE001 - the parser names a bad class path itself
            return None
        if not callable(getattr(data_class, "model_shapes", None)):
            return None
        try:
            datamodule = self._instantiate_datamodule(data)
        except ValueError as exc:
            user = user_error_in(exc)
            if user is None:
                raise
            raise user from None
        fill_model_shapes(model, data_shapes(datamodule), data_class.__name__)
        self.__dict__.pop("config_dump", None)  # Lightning's cached dump (hyper-parameters) predates the shapes
        return datamodule

    def instantiate_classes(self) -> None:
        config = self._subconfig()
        datamodule = self._datamodule_with_shapes(config)
        if datamodule is not None:  # built already: the parser takes it instead of building another
            prebuilt = [datamodule]

            def reuse(cls: type, *args: Any, **kwargs: Any) -> Any:
                return prebuilt.pop() if prebuilt else cls(*args, **kwargs)

            self.parser.add_instantiator(reuse, type(datamodule), subclasses=False, prepend=True)
        from zoo.distributed.local_build import local_build

        try:
            with local_build(config.get("trainer")):  # expert parallel: each process builds only its experts
                super().instantiate_classes()
        except ValueError as exc:  # jsonargparse wraps what a class's __init__ raised: show the user error itself
            user = user_error_in(exc)
            if user is None:
                raise
            raise user from None

    # -- the trainer -------------------------------------------------------------------------------------------
    def _instantiate_trainer(self, config: dict[str, Any], callbacks: list[pl.Callback]) -> pl.Trainer:
        given = config.get("callbacks")
        given = [] if given is None else given if isinstance(given, list) else [given]  # one callback, or a list
        present = [type(c) for c in given + callbacks]
        root = Path(config.get("default_root_dir") or os.getcwd())
        runs.ensure_writable(root)
        monitor = getattr(self.model, "checkpoint_monitor", None)
        mode = getattr(self.model, "checkpoint_mode", "min")
        if config.get("enable_checkpointing", True) is not False and not any(
            issubclass(t, ModelCheckpoint) for t in present
        ):
            callbacks.append(
                AtomicModelCheckpoint(
                    dirpath=root / runs.CHECKPOINTS,
                    save_last=True,
                    monitor=monitor,
                    mode=mode,
                    filename="best-{epoch}-{step}" if monitor else "epoch{epoch}-step{step}",
                    auto_insert_metric_name=False,
                )
            )
        if config.get("enable_progress_bar", True) is not False and not any(
            issubclass(t, ProgressBar) for t in present
        ):
            callbacks.append(ResumableProgressBar())
        seed = self._get(self.config, "seed_everything")
        subconfig = self.config.get(str(self.subcommand), self.config)
        key = self._run_key or runs.run_key([str(c) for c in (subconfig.get("config") or [])])
        for cb in [
            NaNGuard(),
            RNGStateCheckpoint(),
            RunMetadata(seed if isinstance(seed, int) else None),
            RunIdentity(run_identity(subconfig, key)),
            BestMetric(monitor, mode),
            *_routing_stats_callback(),
        ]:
            if type(cb) not in present:
                callbacks.append(cb)
        try:
            return super()._instantiate_trainer(config, callbacks)
        except (MisconfigurationException, ValueError) as exc:  # the Trainer checks its arguments: user config
            raise ConfigError(f"trainer: {exc}") from None

    def _prepare_subcommand_kwargs(self, subcommand: str) -> dict[str, Any]:
        kwargs = super()._prepare_subcommand_kwargs(subcommand)
        if "weights_only" in self._subcommand_method_arguments[subcommand] and kwargs.get("weights_only") is None:
            kwargs["weights_only"] = True
        if self._ckpt_shapes is not None and getattr(self.model, "strict_loading", True):
            check_state_dict(self._ckpt_shapes[1], self.model, self._ckpt_shapes[0])
        return kwargs

    # -- the end of a fit --------------------------------------------------------------------------------------
    def after_fit(self) -> None:
        trainer = self.trainer
        if trainer.interrupted:
            return
        test_metrics = None
        if getattr(self.model, "test_after_fit", False):
            best = bool(trainer.checkpoint_callback and trainer.checkpoint_callback.best_model_path)
            results = trainer.test(
                self.model, datamodule=self.datamodule, ckpt_path="best" if best else None, verbose=False
            )
            test_metrics = {k: float(v) for r in results for k, v in r.items()}
        log_dir = trainer.log_dir  # a collective under DDP: every rank asks
        if trainer.is_global_zero:
            root = self._root or Path(trainer.default_root_dir)
            wall = time.perf_counter() - self._start
            lines = fit_summary(trainer, self.model, self.datamodule, root, log_dir, wall, test_metrics)
            print("\n".join(lines), flush=True)
