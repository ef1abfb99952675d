"""The training / evaluation loop shared by every forecaster of this task (SEER, its dense twin, PatchTST).

A subclass builds ``self.net``: a module mapping x ``(B, L, C)`` to a forecast ``(B, H, C)``, optionally with
``aux_loss() -> Tensor`` (added to the task loss) and ``last_stats`` (a dict of detached diagnostics for
the last forward pass: ``expert_counts`` (E,), ``replaced`` and ``patches`` token counts).
"""

from __future__ import annotations

import pytorch_lightning as pl
import torch
import torch.nn.functional as F
from pytorch_lightning.callbacks import EarlyStopping
from torch import Tensor
from torchmetrics import MeanAbsoluteError, MeanSquaredError

from zoo.callbacks.periodic_checkpoint import PeriodicCheckpoint
from zoo.errors import ConfigError
from zoo_tasks.timeseries.corruption import Corruption, CorruptionStream

LOSSES = {"mae": F.l1_loss, "mse": F.mse_loss}


class Forecaster(pl.LightningModule):
    """Base LightningModule: MAE or MSE training loss, Adam with TFB's ``type3`` schedule (constant for 4
    epochs, then x0.9 per epoch), early stopping on ``val/loss``, and a test pass that also evaluates
    seeded corruptions of the inputs (``test/mse_missing``, ``test/mse_spike``, ``test/mse_noise``, ...).

    All metrics are on the normalised scale over every channel and every test window. ``last.ckpt`` is also
    rewritten every ``checkpoint_every_s`` seconds inside an epoch (``None`` turns this off): one epoch of
    Weather or ETTm takes 10-30 minutes on a CPU, and the data module's training loader resumes mid-epoch.
    """

    checkpoint_monitor = "val/loss"
    checkpoint_mode = "min"

    def __init__(
        self,
        loss: str = "mae",
        lr: float = 1e-4,
        lr_decay: float = 0.9,
        patience: int = 5,
        missing_rate: float = 0.1,
        spike_rate: float = 0.02,
        spike_size: float = 5.0,
        noise_std: float = 0.3,
        corruption_seed: int = 0,
        checkpoint_every_s: float | None = 300.0,
    ):
        super().__init__()
        self.save_hyperparameters()  # from this frame up: the subclass's own arguments and these
        if loss not in LOSSES:
            raise ConfigError(f"unknown loss {loss!r}; choose one of {', '.join(LOSSES)}")
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

    # ------------------------------------------------------------------ forward
    def forward(self, x: Tensor) -> Tensor:
        return self.net(x).contiguous()

    def aux_loss(self) -> Tensor:
        fn = getattr(self.net, "aux_loss", None)
        return fn() if fn is not None else torch.zeros((), device=self.device)

    # ------------------------------------------------------------------ train / val
    def training_step(self, batch, batch_idx):
        x, y = batch
        pred = self(x)
        task = self.loss_fn(pred, y)
        aux = self.aux_loss()
        loss = task + aux
        self.log("train/loss", loss, prog_bar=True, batch_size=x.shape[0])
        self.log("train/task_loss", task, batch_size=x.shape[0])
        self.log("train/aux_loss", aux, batch_size=x.shape[0])
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        pred = self(x)
        self.log("val/loss", self.loss_fn(pred, y), prog_bar=True, batch_size=x.shape[0])
        self.val_mse.update(pred, y)
        self.val_mae.update(pred, y)
        self.log("val/mse", self.val_mse, batch_size=x.shape[0])
        self.log("val/mae", self.val_mae, batch_size=x.shape[0])

    # ------------------------------------------------------------------ test (clean + corrupted)
    def on_test_start(self) -> None:
        self._stream = CorruptionStream(self.corruptions, seed=self.hparams.corruption_seed)
        self._test_stats = {}

    def _accumulate_stats(self, condition: str) -> None:
        stats = getattr(self.net, "last_stats", None) or {}
        acc = self._test_stats.setdefault(condition, {})
        for key, value in stats.items():
            value = torch.as_tensor(value, dtype=torch.float64).cpu()
            acc[key] = acc[key] + value if key in acc else value

    def test_step(self, batch, batch_idx):
        x, y = batch
        inputs = {"clean": x, **self._stream(x)}
        for condition, xc in inputs.items():
            pred = self(xc)
            self._accumulate_stats(condition)
            self.test_mse[condition].update(pred, y)
            self.test_mae[condition].update(pred, y)
            suffix = "" if condition == "clean" else f"_{condition}"
            self.log(f"test/mse{suffix}", self.test_mse[condition], batch_size=x.shape[0])
            self.log(f"test/mae{suffix}", self.test_mae[condition], batch_size=x.shape[0])

    def extra_results(self) -> dict:
        """Routing stats (expert load), fraction of patches replaced and the corruption settings of the last
        test pass, per condition; plus the parameter count."""
        out: dict = {
            "num_parameters": sum(p.numel() for p in self.parameters()),
            "corruptions": {c.kind: c.describe() for c in self.corruptions},
        }
        for condition, acc in self._test_stats.items():
            entry: dict = {}
            if "expert_counts" in acc:
                counts = acc["expert_counts"]
                load = counts / counts.sum().clamp(min=1)
                entry["expert_load"] = [round(float(v), 5) for v in load]
                entry["expert_load_cv"] = float(load.std(unbiased=False) / load.mean().clamp(min=1e-12))
            if "patches" in acc:
                entry["replaced_fraction"] = float(acc["replaced"] / acc["patches"].clamp(min=1))
            if entry:
                out.setdefault("diagnostics", {})[condition] = entry
        return out

    # ------------------------------------------------------------------ optimisation
    def configure_optimizers(self):
        optimizer = torch.optim.Adam(self.parameters(), lr=self.hparams.lr)
        decay = self.hparams.lr_decay
        # TFB / Time-Series-Library ``type3``: four epochs at ``lr``, then x``decay`` after each epoch
        schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda epoch: decay ** max(0, epoch - 3))
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": schedule, "interval": "epoch"}}

    def configure_callbacks(self):
        callbacks = [EarlyStopping(monitor="val/loss", mode="min", patience=self.hparams.patience)]
        if self.hparams.checkpoint_every_s:
            callbacks.append(PeriodicCheckpoint(self.hparams.checkpoint_every_s))
        return callbacks
