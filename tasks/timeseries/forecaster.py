"""The training / evaluation loop shared by every forecaster of this task (SEER, its dense twin, PatchTST).

A subclass builds its network (``build_network``), as ``self.net``, from the model's other init
args: a module mapping x ``(B, L, C)`` to a :class:`Forecast` (the forecast
``(B, H, C)``, the routing of its mixtures, their weighted aux loss, and detached task diagnostics).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from types import MappingProxyType
from typing import NamedTuple

import torch
import torch.nn.functional as F
from pytorch_lightning.callbacks import EarlyStopping
from torch import Tensor
from torchmetrics import MeanAbsoluteError, MeanSquaredError

from zoo.callbacks.periodic_checkpoint import PeriodicCheckpoint
from zoo.errors import ConfigError
from zoo.moe import Routing
from zoo.task_module import MoETaskModule, StepLoss
from zoo.utils.signature import signature_defaults
from zoo_tasks.timeseries.corruption import Corruption, CorruptionStream

LOSSES = {"mae": F.l1_loss, "mse": F.mse_loss}
_NONE: Mapping = MappingProxyType({})


class Forecast(NamedTuple):
    """What a forecasting network returns for x (B, L, C).

    forecast: (B, H, C). routing: mixture name (module path inside the network) -> its `Routing` ({} for a
    network without a mixture). aux_loss: the mixtures' weighted aux loss (``zoo.moe.MoE.aux_loss``), or None.
    diagnostics: detached task-specific counts of this forward pass (SEER: ``replaced``, ``patches``).
    """

    forecast: Tensor
    routing: Mapping[str, Routing] = _NONE
    aux_loss: Tensor | None = None
    diagnostics: Mapping[str, Tensor] = _NONE


def check_from_data(**shapes: int | None) -> None:
    """Raise a ConfigError naming the first ``model.init_args`` shape left to the data (None) that nothing filled:
    ``zoo fit`` fills it from the datamodule's ``model_shapes()``; built by hand, the model needs it stated."""
    for name, value in shapes.items():
        if value is None:
            raise ConfigError(
                f"model.init_args.{name} is not set: state it, or let `zoo fit` read it from the data "
                "(ForecastingDataModule.model_shapes())"
            )


def check_positive(**sizes: float) -> None:
    """Raise a ConfigError naming the first ``model.init_args`` size that is not > 0."""
    for name, value in sizes.items():
        if not value > 0:
            raise ConfigError(f"model.init_args.{name} must be > 0, got {value}")


def check_probability(**rates: float) -> None:
    """Raise a ConfigError naming the first ``model.init_args`` dropout rate outside [0, 1)."""
    for name, value in rates.items():
        if not 0.0 <= value < 1.0:
            raise ConfigError(f"model.init_args.{name} must be in [0, 1), got {value}")


class Forecaster(MoETaskModule):
    """Base LightningModule around a forecasting network (``build_network``, built from the init args this class
    does not take): MAE or MSE training loss (``loss``; by default the class's ``default_loss``: MAE, PatchTST's MSE),
    Adam with TFB's ``type3`` schedule (constant for 4
    epochs, then x0.9 per epoch), early stopping on ``val/loss``, and a test pass that also evaluates
    seeded corruptions of the inputs (``test/mse_missing``, ``test/mse_spike``, ``test/mse_noise``, ...).

    All metrics are on the normalised scale over every channel and every test window. ``last.ckpt`` is also
    rewritten every ``checkpoint_every_s`` seconds inside an epoch (``None`` turns this off): one epoch of
    Weather or ETTm takes 10-30 minutes on a CPU, and the data module's training loader resumes mid-epoch.
    """

    checkpoint_monitor = "val/loss"
    checkpoint_mode = "min"
    progress_bar = ("train/loss", "val/loss")
    synced_stages = ("val",)  # at world > 1 the checkpoint monitor is the mean val/loss of every process
    optimizer_hparams = ("lr",)
    default_loss = "mae"  # the training loss when ``loss`` is not given (a subclass sets its paper's)

    def __init__(
        self,
        loss: str | None = None,
        lr: float = 1e-4,
        lr_decay: float = 0.9,
        patience: int = 5,
        missing_rate: float = 0.1,
        spike_rate: float = 0.02,
        spike_size: float = 5.0,
        noise_std: float = 0.3,
        corruption_seed: int = 0,
        checkpoint_every_s: float | None = 300.0,
        **network,
    ):
        super().__init__()
        self.save_hyperparameters()  # from this frame up: the subclass's own arguments, these and ``network``
        loss = self.hparams["loss"] = loss or self.default_loss
        if loss not in LOSSES:
            raise ConfigError(f"unknown loss {loss!r}; choose one of {', '.join(LOSSES)}")
        if not (lr > 0 and math.isfinite(lr)):
            raise ConfigError(f"model.init_args.lr must be a positive number, got {lr}")
        if not 0.0 < lr_decay <= 1.0:
            raise ConfigError(f"model.init_args.lr_decay must be in (0, 1], got {lr_decay}")
        if patience < 0:
            raise ConfigError(f"model.init_args.patience must be >= 0, got {patience}")
        self.loss_fn = LOSSES[loss]
        self.corruptions = [
            Corruption("missing", missing_rate),
            Corruption("spike", spike_rate, spike_size),
            Corruption("noise", noise_std),
        ]
        self.test_conditions = ["clean"] + [c.kind for c in self.corruptions]
        self.val_mse, self.val_mae = MeanSquaredError(), MeanAbsoluteError()
        self.test_mse = torch.nn.ModuleDict({k: MeanSquaredError() for k in self.test_conditions})
        self.test_mae = torch.nn.ModuleDict({k: MeanAbsoluteError() for k in self.test_conditions})
        self._stream: CorruptionStream | None = None
        self._test_stats: dict[str, dict[str, Tensor]] = {}
        self.net = self.build_network(**network)
        # the network's defaults too, as a config would give them (a model built in Python passes only some)
        self.hparams.update({k: v for k, v in signature_defaults(type(self.net)).items() if k not in self.hparams})

    def build_network(self, **network) -> torch.nn.Module:
        """The forecasting network built from the model's remaining init args. A subclass returns its network class
        called with them (``return SEERNet(**network)``): jsonargparse follows ``**network`` into that call and
        LightningCLI lists the class's arguments, with their types and defaults, as the model's own, so no wrapper
        repeats them."""
        raise NotImplementedError("a Forecaster subclass builds its network here")

    # ------------------------------------------------------------------ forward
    def forward(self, x: Tensor) -> Tensor:
        """x (B, L, C) -> forecast (B, H, C)."""
        return self.net(x).forecast.contiguous()

    @staticmethod
    def _routing(out: Forecast) -> dict[str, Routing]:
        """The network's routings named by their module path in this LightningModule (``net.embedding.moe``)."""
        return {f"net.{name}": routing for name, routing in out.routing.items()}

    # ------------------------------------------------------------------ train / val
    def step_loss(self, batch) -> StepLoss:
        """Task loss (MAE or MSE) + the network's weighted aux loss (its mixtures' ``MoE.aux_loss``)."""
        x, y = batch
        out = self.net(x)
        task = self.loss_fn(out.forecast.contiguous(), y)
        aux = out.aux_loss if out.aux_loss is not None else torch.zeros((), device=task.device)
        loss = task + aux
        return StepLoss(loss, self._routing(out), {"loss": loss, "task_loss": task, "aux_loss": aux}, x.shape[0])

    def evaluate(self, batch, batch_idx: int, stage: str, dataloader_idx: int = 0) -> dict[str, Routing]:
        return self._validate(batch) if stage == "val" else self._test(batch)

    def _validate(self, batch) -> dict[str, Routing]:
        x, y = batch
        out = self.net(x)
        pred = out.forecast.contiguous()
        loss = self.loss_fn(pred, y)
        self.val_mse.update(pred, y)
        self.val_mae.update(pred, y)
        self.log_metrics("val", {"loss": loss, "mse": self.val_mse, "mae": self.val_mae}, x.shape[0])
        return self._routing(out)

    # ------------------------------------------------------------------ test (clean + corrupted)
    def on_test_start(self) -> None:
        self._stream = CorruptionStream(self.corruptions, seed=self.hparams.corruption_seed)
        self._test_stats = {}

    def _accumulate_diagnostics(self, condition: str, diagnostics: Mapping[str, Tensor]) -> None:
        acc = self._test_stats.setdefault(condition, {})
        for key, value in diagnostics.items():
            value = torch.as_tensor(value, dtype=torch.float64).cpu()
            acc[key] = acc[key] + value if key in acc else value

    def _test(self, batch) -> dict[str, Routing]:
        """Clean and corrupted metrics; the returned routing is the clean pass's (what the test summary reports)."""
        x, y = batch
        inputs = {"clean": x, **self._stream(x)}
        routing: dict[str, Routing] = {}
        for condition, xc in inputs.items():
            out = self.net(xc)
            pred = out.forecast.contiguous()
            self._accumulate_diagnostics(condition, out.diagnostics)
            if condition == "clean":
                routing = self._routing(out)
            self.test_mse[condition].update(pred, y)
            self.test_mae[condition].update(pred, y)
            suffix = "" if condition == "clean" else f"_{condition}"
            metrics = {f"mse{suffix}": self.test_mse[condition], f"mae{suffix}": self.test_mae[condition]}
            self.log_metrics("test", metrics, x.shape[0])
        return routing

    def extra_results(self) -> dict:
        """The fraction of patches replaced per test condition (SEER), the corruption settings and the parameter
        count. Routing statistics are not computed here: the routing-stats callback summarises the routings
        the steps return."""
        out: dict = {
            "num_parameters": sum(p.numel() for p in self.parameters()),
            "corruptions": {c.kind: c.describe() for c in self.corruptions},
        }
        for condition, acc in self._test_stats.items():
            entry: dict = {}
            if "patches" in acc:
                entry["replaced_fraction"] = float(acc["replaced"] / acc["patches"].clamp(min=1))
            if entry:
                out.setdefault("diagnostics", {})[condition] = entry
        return out

    # ------------------------------------------------------------------ optimisation
    def lr_schedule(self, optimizer: torch.optim.Optimizer) -> dict:
        """TFB / Time-Series-Library ``type3``: four epochs at ``lr``, then x``lr_decay`` after each epoch."""
        decay = self.hparams.lr_decay
        schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda epoch: decay ** max(0, epoch - 3))
        return {"scheduler": schedule, "interval": "epoch"}

    def configure_callbacks(self):
        callbacks = [EarlyStopping(monitor="val/loss", mode="min", patience=self.hparams.patience)]
        if self.hparams.checkpoint_every_s:
            callbacks.append(PeriodicCheckpoint(self.hparams.checkpoint_every_s))
        return callbacks
