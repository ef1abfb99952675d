"""A trained run, loaded back from its folder or one of its checkpoints: the model in eval mode with the weights of
the checkpoint, the resolved config it was trained with, and its datamodule (optionally on another dataset).

A ``zoo fit`` run folder (``runs/<config>/<stamp>``) holds ``checkpoints/{best-*,last}.ckpt`` and the resolved
config Lightning saved (``lightning_logs/version_N/config.yaml``). The model and datamodule are rebuilt from that
config by :class:`zoo.cli.lightning_cli.ZooCLI` without running it (``run=False``), exactly as ``zoo fit`` built
them, and the checkpoint's ``state_dict`` is loaded strictly (``zoo.cli.checkpoint_check`` names a mismatch).
Lightning's ``load_from_checkpoint`` is not used: it rebuilds the model from the saved hyper-parameters only, and a
zoo model also needs the shapes its datamodule fills into the config (``model_shapes``).
"""

from __future__ import annotations

import contextlib
import logging
import sys
import tempfile
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from zoo.errors import ConfigError

# Keys of a saved ``zoo fit`` config that build the run (the others, ckpt_path and weights_only, were the fit call's).
BUILD_KEYS = ("seed_everything", "trainer", "model", "data", "optimizer", "lr_scheduler")
# The trainer a loaded run gets: no logger, checkpoints, progress bar or summary (loading writes nothing).
QUIET_TRAINER = (
    "--trainer.logger=false",
    "--trainer.enable_checkpointing=false",
    "--trainer.enable_progress_bar=false",
    "--trainer.enable_model_summary=false",
    "--trainer.accelerator=cpu",
    "--trainer.devices=1",
    "--trainer.num_nodes=1",
    "--trainer.strategy=auto",
)


@dataclass
class TrainedRun:
    """A model trained by ``zoo fit``, ready to predict (see :func:`load_run`).

    model: the LightningModule in eval mode, on the CPU, with the checkpoint's weights.
    datamodule: its LightningDataModule as configured (``setup`` not yet called), or with the overrides given.
    config: the resolved config it was trained with (a plain dict: model, data, trainer, seed_everything, ...).
    checkpoint: the checkpoint file the weights come from (None: a model that trains nothing, e.g. EdgeBank);
    run_dir: the run folder.
    """

    model: Any
    datamodule: Any
    config: dict[str, Any]
    checkpoint: Path | None
    run_dir: Path | None
    overrides: tuple[str, ...] = field(default_factory=tuple)

    @property
    def model_class(self) -> str:
        """The model's ``class_path`` (``"package.module.Class"``)."""
        return str(self.config["model"]["class_path"])


def _saved_config(run_dir: Path) -> Path:
    """The newest ``config.yaml`` Lightning saved in ``run_dir`` (its fit's resolved config)."""
    found = sorted(run_dir.glob("lightning_logs/version_*/config.yaml"), key=lambda p: p.stat().st_mtime)
    found = found or sorted(run_dir.glob("config.yaml"))
    if not found:
        raise ConfigError(
            f"{run_dir} holds no config.yaml (lightning_logs/version_N/config.yaml): is it a zoo fit run?"
        )
    return found[-1]


def resolve_run(path: str | Path, checkpoint: str = "best") -> tuple[Path | None, Path | None, Path]:
    """``(run_dir, checkpoint file, config file)`` for a run folder or a checkpoint inside one.

    checkpoint: ``best`` (the run's best checkpoint, else its last), ``last``, or a file (when ``path`` is a
    folder). A checkpoint file given as ``path`` finds its config in the run folder above ``checkpoints/``.
    """
    from zoo.cli import run_dir as runs

    path = Path(path)
    if not path.exists():
        raise ConfigError(f"{path} does not exist: pass a run folder (runs/<config>/<stamp>) or a .ckpt inside one")
    if path.is_file():
        run = runs.run_of_checkpoint(path)
        if run is None:
            raise ConfigError(f"{path} is not inside a run folder's checkpoints/: its config cannot be found")
        return run, path, _saved_config(run)
    if checkpoint in ("best", "last"):
        found = runs.run_checkpoint(path, checkpoint)
        if found is None and checkpoint == "best":  # a run whose module names no checkpoint monitor keeps only last
            found = runs.run_checkpoint(path, "last")
        config_file = _saved_config(path)
        if found is None and not _trains_nothing(config_file):
            raise ConfigError(f"{path / runs.CHECKPOINTS} has no {checkpoint} checkpoint: train one with `zoo fit`")
        return path, found, config_file  # found None: a baseline fitted with 0 epochs (EdgeBank) keeps no weights
    else:
        found = Path(checkpoint)
        if not found.is_file():
            raise ConfigError(f"checkpoint {found} does not exist")
    return path, found, _saved_config(path)


def saved_model_class(config_file: Path) -> str:
    """The model ``class_path`` of a run's saved config."""
    try:
        return str(yaml.safe_load(config_file.read_text())["model"]["class_path"])
    except (yaml.YAMLError, TypeError, KeyError):
        raise ConfigError(f"{config_file} is not a zoo fit config (it names no model class_path)") from None


def _trains_nothing(config_file: Path) -> bool:
    """Whether the run's model class declares ``trains_nothing`` (fitted with 0 epochs, nothing to checkpoint)."""
    from zoo.cli.lightning_cli import _trains_nothing as declared

    return declared({"class_path": saved_model_class(config_file)})


def _fit_config(config_file: Path, folder: Path) -> tuple[Path, dict[str, Any]]:
    """The saved config without the fit call's own keys, written to ``folder``; and as a dict."""
    try:
        config = yaml.safe_load(config_file.read_text())
    except yaml.YAMLError as exc:
        raise ConfigError(f"{config_file} is not a readable YAML config: {exc}") from None
    if not isinstance(config, dict) or "model" not in config:
        raise ConfigError(f"{config_file} is not a zoo fit config (it has no model)")
    config = {k: v for k, v in config.items() if k in BUILD_KEYS}
    # the trainer is rebuilt quiet (QUIET_TRAINER): the fit's own settings (limits, folders) would only print notes
    out = folder / "config.yaml"
    out.write_text(yaml.safe_dump({k: v for k, v in config.items() if k != "trainer"}, sort_keys=False))
    return out, config


@contextlib.contextmanager
def _quiet_build():
    """No "Seed set" / "GPU available" notes while a run is rebuilt: loading is not a training run."""
    names = (
        "lightning_fabric.utilities.seed",
        "lightning.fabric.utilities.seed",
        "pytorch_lightning.utilities.rank_zero",
    )
    loggers = [logging.getLogger(name) for name in names]
    levels, argv = [log.level for log in loggers], sys.argv
    sys.argv = sys.argv[:1]  # LightningCLI warns when given args beside a command line (zoo predict's own)
    for log in loggers:
        log.setLevel(logging.WARNING)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)  # torch.jit.script's deprecation, raised in PyG's imports
            yield
    finally:
        for log, level in zip(loggers, levels):
            log.setLevel(level)
        sys.argv = argv


def build(config_file: str | Path, overrides: Sequence[str] = ()) -> Any:
    """``ZooCLI(run=False)`` over ``config_file`` and ``overrides`` with a trainer that writes nothing: the model
    and datamodule exactly as ``zoo fit`` builds them (``.model``, ``.datamodule``, ``.config``)."""
    from zoo.cli.lightning_cli import ZooCLI

    with _quiet_build():
        return ZooCLI(args=["--config", str(config_file), *QUIET_TRAINER, *overrides], run=False)


def _build_in_setup(trainer: Any, model: Any, datamodule: Any) -> None:
    """Run the model's own ``setup`` with its trainer and datamodule attached (as ``trainer.fit`` / ``test`` do), for
    a model that builds its layers there (the RL agents: their networks' sizes come from the environment); the
    trainer is detached again: a loaded run holds none."""
    import pytorch_lightning as pl

    if type(model).setup is pl.LightningModule.setup:
        return
    trainer._data_connector.attach_data(model, datamodule=datamodule)
    try:
        model.setup("predict")
    finally:
        model.trainer = None


def load_run(path: str | Path, checkpoint: str = "best", overrides: Sequence[str] = ()) -> TrainedRun:
    """Load a trained run from its folder (``runs/<config>/<stamp>``) or one of its ``.ckpt`` files.

    checkpoint: ``best`` (default; the last checkpoint when the run kept no best), ``last`` or a file.
    overrides: command-line style settings applied over the saved config, e.g.
    ``["--data.init_args.path=my.csv"]`` to predict on your own data with the same preprocessing.
    """
    import torch

    from zoo.cli.checkpoint_check import check_state_dict, load_checkpoint

    run_dir, ckpt, config_file = resolve_run(path, checkpoint)
    with tempfile.TemporaryDirectory(prefix="zoo-load-") as tmp:
        fit_config, saved = _fit_config(config_file, Path(tmp))
        cli = build(fit_config, overrides)
    model = cli.model
    if ckpt is not None:
        state = load_checkpoint(ckpt)["state_dict"]
        if set(state) - set(model.state_dict()):  # layers built in setup() from the environment's sizes
            _build_in_setup(cli.trainer, model, cli.datamodule)
        check_state_dict({k: tuple(v.shape) for k, v in state.items() if hasattr(v, "shape")}, model, ckpt)
        model.load_state_dict(state, strict=getattr(model, "strict_loading", True))
    model.to(torch.device("cpu")).eval()
    config = cli.config.as_dict() if hasattr(cli.config, "as_dict") else dict(cli.config)
    config = {**{k: v for k, v in config.items() if k in BUILD_KEYS}, "trainer": saved.get("trainer")}
    return TrainedRun(model, cli.datamodule, config, ckpt, run_dir, tuple(overrides))
