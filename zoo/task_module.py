"""`MoETaskModule`: the task protocol, written once, that a task plugin's LightningModule implements.

What the zoo reads from a task's module, and where:

- every step returns ``{"loss": loss, "routing": {mixture name: Routing}}`` (validation and test: ``{"routing"}``):
  ``zoo.callbacks.RoutingStatsCallback`` summarises the routings, Lightning optimises the loss;
- ``loss_and_routing(batch) -> (loss, routing)``: one batch's training loss and routings, as the training step
  computes them (``zoo.moe.testing.check_router_step`` and the tasks' speed benchmarks call it);
- ``checkpoint_monitor`` / ``checkpoint_mode``, class data: the validation metric whose best checkpoint is tested
  (``zoo fit`` / ``zoo reproduce``) and that ``zoo tune`` scores; None: no selection, the last weights are tested;
- ``extra_results() -> dict``: what the run record keeps beside the metrics.

A task implements two hooks, :meth:`MoETaskModule.step_loss` (the objective its paper defines) and
:meth:`MoETaskModule.evaluate` (its metrics), and declares its logging, aux-loss weights and optimiser as data; the
steps, the logging calls, the aux-loss rule and the optimiser come from here. Only what the task's paper defines
stays in the task.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any, ClassVar, NamedTuple

import pytorch_lightning as pl
import torch
from torch import Tensor

from zoo.moe import Routing, weighted_aux_loss

CHECKPOINT_MODES = ("min", "max")


class StepLoss(NamedTuple):
    """One training batch's objective, as a task's :meth:`MoETaskModule.step_loss` computes it.

    loss: the scalar training loss (task terms plus the weighted aux losses: see :meth:`MoETaskModule.with_aux_loss`).
    routing: ``{mixture name: Routing}`` of the forward pass ({} for a model without a mixture).
    logs: ``{name: scalar}`` logged as ``train/<name>``, in this order (``"loss"`` included where the task logs it).
    batch_size: the items the loss averages over (Lightning's ``batch_size`` of the logged values).
    """

    loss: Tensor
    routing: Mapping[str, Routing]
    logs: Mapping[str, Any]
    batch_size: int


class MoETaskModule(pl.LightningModule):
    """A task's LightningModule: the step protocol, aux-loss weighting, logging and optimiser of every task.

    A task implements:

    - :meth:`step_loss` ``(batch) -> StepLoss``: the loss its paper defines, the routings, what to log;
    - :meth:`evaluate` ``(batch, batch_idx, stage, dataloader_idx) -> {mixture name: Routing}``: the metrics of a
      validation (``stage="val"``) or test (``"test"``) batch, logged with :meth:`log_metrics`.

    and declares, as class data (defaults in brackets):

    - ``checkpoint_monitor`` [None] / ``checkpoint_mode`` [``"min"``]: the validation metric that selects the
      tested checkpoint, and whether lower or higher is better;
    - ``progress_bar`` [``("train/loss",)``]: the logged names the progress bar shows;
    - ``synced_stages`` [()]: stages (``"train"``, ``"val"``, ``"test"``) whose logged values are averaged over
      data-parallel processes (``sync_dist``); others log this process's value;
    - ``train_metrics_per_epoch`` [False]: training values logged as epoch means only, instead of per step;
    - ``optimizer_class`` [Adam] and ``optimizer_hparams`` [``("lr", "weight_decay")``]: the optimiser over all
      parameters and the hyperparameters passed to it by name; :meth:`lr_schedule` adds a scheduler. A task with
      parameter groups overrides :meth:`configure_optimizers`;
    - ``aux_weights`` [{}], set per instance: ``{zoo.moe aux-loss name: weight}`` that :meth:`with_aux_loss` adds.

    It provides ``training_step`` / ``validation_step`` / ``test_step`` (the protocol above), ``loss_and_routing``,
    :meth:`with_aux_loss`, :meth:`log_metrics`, :meth:`log_folder`, ``configure_optimizers`` and a default
    ``extra_results`` ({}). It defines no ``__init__``: a task's own ``__init__`` and ``save_hyperparameters()``
    are the whole of its configuration.
    """

    checkpoint_monitor: ClassVar[str | None] = None
    checkpoint_mode: ClassVar[str] = "min"
    progress_bar: ClassVar[tuple[str, ...]] = ("train/loss",)
    synced_stages: ClassVar[tuple[str, ...]] = ()
    train_metrics_per_epoch: ClassVar[bool] = False
    optimizer_class: ClassVar[type[torch.optim.Optimizer]] = torch.optim.Adam
    optimizer_hparams: ClassVar[tuple[str, ...]] = ("lr", "weight_decay")
    aux_weights: Mapping[str, float] = MappingProxyType({})

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        if cls.checkpoint_mode not in CHECKPOINT_MODES:
            raise TypeError(f"{cls.__name__}.checkpoint_mode is {cls.checkpoint_mode!r}; valid: min, max")

    # ---- the hooks a task implements -------------------------------------------------------------------------
    def step_loss(self, batch: Any) -> StepLoss:
        """The training objective of one batch (see :class:`StepLoss`)."""
        raise NotImplementedError(f"{type(self).__name__} must implement step_loss(batch) -> StepLoss")

    def evaluate(self, batch: Any, batch_idx: int, stage: str, dataloader_idx: int = 0) -> Mapping[str, Routing]:
        """Log the metrics of one ``stage`` batch (``"val"`` or ``"test"``); return its routings ({}: none)."""
        raise NotImplementedError(f"{type(self).__name__} must implement evaluate(batch, batch_idx, stage)")

    # ---- the protocol ----------------------------------------------------------------------------------------
    def loss_and_routing(self, batch: Any) -> tuple[Tensor, Mapping[str, Routing]]:
        """(training loss, ``{mixture name: Routing}``) of one batch, as :meth:`training_step` computes them."""
        step = self.step_loss(batch)
        return step.loss, step.routing

    def training_step(self, batch: Any, batch_idx: int) -> dict:
        step = self.step_loss(batch)
        per_epoch = {"on_step": False, "on_epoch": True} if self.train_metrics_per_epoch else {}
        self.log_metrics("train", step.logs, step.batch_size, **per_epoch)
        return {"loss": step.loss, "routing": step.routing}

    def validation_step(self, batch: Any, batch_idx: int, dataloader_idx: int = 0) -> dict:
        return {"routing": self.evaluate(batch, batch_idx, "val", dataloader_idx)}

    def test_step(self, batch: Any, batch_idx: int, dataloader_idx: int = 0) -> dict:
        return {"routing": self.evaluate(batch, batch_idx, "test", dataloader_idx)}

    def with_aux_loss(self, loss: Tensor, routing: Mapping[str, Routing]) -> Tensor:
        """``loss + zoo.moe.weighted_aux_loss(routing, self.aux_weights)`` (each named loss weighted, averaged over
        the mixtures, summed in the order of ``aux_weights``); ``loss`` itself when the step routed nothing or every
        weight is zero. The one rule by which a task adds its mixtures' aux losses to its own loss."""
        if not routing or not any(self.aux_weights.values()):
            return loss
        return loss + weighted_aux_loss(routing, self.aux_weights)

    def log_metrics(self, stage: str, values: Mapping[str, Any], batch_size: int | None = None, **options) -> None:
        """``self.log(f"{stage}/{name}", value)`` for each entry, in order: averaged over ``batch_size`` items,
        synchronised over processes when ``stage`` is in ``synced_stages``, in the progress bar when its name is in
        ``progress_bar``; ``options`` are passed on (``on_step``, ``on_epoch``)."""
        sync = stage in self.synced_stages
        for name, value in values.items():
            key = f"{stage}/{name}"
            self.log(key, value, prog_bar=key in self.progress_bar, sync_dist=sync, batch_size=batch_size, **options)

    def log_folder(self) -> Path:
        """The running trainer's log folder (the run folder), else its ``default_root_dir``."""
        trainer = self.trainer
        return Path(trainer.log_dir or trainer.default_root_dir)

    def extra_results(self) -> dict:
        """What the run record keeps beside the metrics (diagnostics, figure paths); none by default."""
        return {}

    # ---- optimisation ----------------------------------------------------------------------------------------
    def lr_schedule(self, optimizer: torch.optim.Optimizer) -> dict | None:
        """Lightning's ``lr_scheduler`` entry (``{"scheduler": ..., "interval": ...}``) for ``optimizer``; None: a
        constant learning rate."""
        return None

    def configure_optimizers(self):
        kwargs = {name: self.hparams[name] for name in self.optimizer_hparams}
        optimizer = self.optimizer_class(self.parameters(), **kwargs)
        schedule = self.lr_schedule(optimizer)
        return optimizer if schedule is None else {"optimizer": optimizer, "lr_scheduler": schedule}
