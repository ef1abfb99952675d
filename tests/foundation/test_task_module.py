"""``zoo.task_module.MoETaskModule``, the task protocol written once: a toy task implementing only ``step_loss`` and
``evaluate`` gets steps that return ``{"loss", "routing"}``, ``loss_and_routing``, aux losses weighted by one rule,
its declared logging (names, batch sizes, progress bar, ``sync_dist`` per stage, per-epoch means), the checkpoint
monitor as class data, and its optimiser and schedule from declared hyperparameters; the base names no task."""

from __future__ import annotations

import ast
import inspect
import warnings

import pytest
import pytorch_lightning as pl
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
from zoo_testing import quiet_trainer

import zoo.task_module
from zoo.moe import MoE, Routing, weighted_aux_loss
from zoo.task_module import MoETaskModule, StepLoss


class ToyTask(MoETaskModule):
    """x (B, 4) -> a 4-expert top-2 MoE -> 2 classes; cross-entropy plus the weighted aux losses."""

    checkpoint_monitor = "val/acc"
    checkpoint_mode = "max"
    progress_bar = ("train/loss", "val/acc")
    synced_stages = ("val",)

    def __init__(self, lr: float = 0.05, weight_decay: float = 0.0, aux_weights: dict | None = None):
        super().__init__()
        self.save_hyperparameters()
        self.aux_weights = dict(aux_weights or {})
        self.moe = MoE(dim=4, hidden=8, num_experts=4, top_k=2, router="topk")
        self.out = nn.Linear(4, 2)

    def step_loss(self, batch) -> StepLoss:
        x, y = batch
        h, routing = self.moe(x)
        task = F.cross_entropy(self.out(h), y)
        routings = {"moe": routing}
        loss = self.with_aux_loss(task, routings)
        return StepLoss(loss, routings, {"loss": loss, "task": task}, len(y))

    def evaluate(self, batch, batch_idx: int, stage: str, dataloader_idx: int = 0) -> dict[str, Routing]:
        x, y = batch
        h, routing = self.moe(x)
        self.log_metrics(stage, {"acc": (self.out(h).argmax(-1) == y).float().mean()}, len(y))
        return {"moe": routing}


def batch(n: int = 12, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 4, generator=g)
    return x, (x[:, 0] > 0).long()


def loader() -> DataLoader:
    x, y = batch(24)
    return DataLoader(TensorDataset(x, y), batch_size=12)


class LogRecorder(ToyTask):
    """Records ``self.log`` calls instead of logging (no trainer needed)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.calls: list[tuple[str, dict]] = []

    def log(self, name, value, **options) -> None:
        self.calls.append((name, options))


def test_the_steps_return_the_protocol():
    torch.manual_seed(0)
    task = LogRecorder(aux_weights={"load_balance": 0.01})
    torch.manual_seed(1)
    loss, routing = task.loss_and_routing(batch())
    torch.manual_seed(1)
    train = task.training_step(batch(), 0)
    assert set(train) == {"loss", "routing"} and torch.equal(train["loss"], loss)
    assert list(train["routing"]) == list(routing) == ["moe"] and isinstance(train["routing"]["moe"], Routing)
    for step in (task.validation_step, task.test_step):
        out = step(batch(), 0)
        assert list(out) == ["routing"] and list(out["routing"]) == ["moe"]


def test_aux_losses_are_added_by_one_rule():
    torch.manual_seed(0)
    task = ToyTask(aux_weights={"load_balance": 0.5, "z": 0.1})
    task_loss = torch.tensor(1.25)
    _, routing = task.moe(batch()[0])
    routings = {"moe": routing}
    expected = task_loss + weighted_aux_loss(routings, task.aux_weights)
    assert torch.equal(task.with_aux_loss(task_loss, routings), expected)
    assert task.with_aux_loss(task_loss, {}) is task_loss  # nothing routed
    task.aux_weights = {"load_balance": 0.0}
    assert task.with_aux_loss(task_loss, routings) is task_loss  # every weight zero
    assert ToyTask().with_aux_loss(task_loss, routings) is task_loss  # no weights declared


def test_logging_follows_the_declared_names_batch_sizes_progress_bar_and_synced_stages():
    task = LogRecorder()
    task.training_step(batch(12), 0)
    task.validation_step(batch(5), 0)
    task.test_step(batch(7), 0)
    logged = {name: (o["batch_size"], o["prog_bar"], o["sync_dist"]) for name, o in task.calls}
    assert logged == {
        "train/loss": (12, True, False),
        "train/task": (12, False, False),
        "val/acc": (5, True, True),
        "test/acc": (7, False, False),
    }
    assert [name for name, _ in task.calls[:2]] == ["train/loss", "train/task"]  # in the order of StepLoss.logs
    assert all("on_step" not in o for _, o in task.calls)  # Lightning's per-hook defaults


def test_training_values_can_be_epoch_means():
    class EpochMeans(LogRecorder):
        train_metrics_per_epoch = True

    task = EpochMeans()
    task.training_step(batch(), 0)
    assert all(o["on_step"] is False and o["on_epoch"] is True for _, o in task.calls)


def test_a_fit_logs_the_metrics_and_selects_by_the_declared_monitor(tmp_path):
    torch.manual_seed(0)
    task = ToyTask(aux_weights={"load_balance": 0.01})
    trainer = quiet_trainer(max_epochs=2, default_root_dir=tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer.fit(task, train_dataloaders=loader(), val_dataloaders=loader())
        assert {"train/loss", "train/task", "val/acc"} <= set(trainer.callback_metrics)
        assert set(trainer.progress_bar_metrics) == {"train/loss", "val/acc"}
        (tested,) = trainer.test(task, dataloaders=loader(), verbose=False)
    assert set(tested) == {"test/acc"}
    assert (ToyTask.checkpoint_monitor, ToyTask.checkpoint_mode) == ("val/acc", "max")
    assert (MoETaskModule.checkpoint_monitor, MoETaskModule.checkpoint_mode) == (None, "min")


def test_a_checkpoint_mode_other_than_min_or_max_is_refused_when_the_class_is_defined():
    with pytest.raises(TypeError, match="checkpoint_mode is 'maximum'; valid: min, max"):

        class Bad(ToyTask):
            checkpoint_mode = "maximum"


def test_the_optimiser_comes_from_declared_hyperparameters_and_the_schedule_hook():
    task = ToyTask(lr=0.03, weight_decay=0.001)
    optimizer = task.configure_optimizers()
    assert type(optimizer) is torch.optim.Adam
    assert optimizer.defaults["lr"] == 0.03 and optimizer.defaults["weight_decay"] == 0.001
    assert optimizer.param_groups[0]["params"] == list(task.parameters())

    class Scheduled(ToyTask):
        optimizer_class = torch.optim.AdamW
        optimizer_hparams = ("lr",)

        def lr_schedule(self, optimizer):
            return {"scheduler": torch.optim.lr_scheduler.StepLR(optimizer, 1), "interval": "step"}

    out = Scheduled(lr=0.02, weight_decay=0.5).configure_optimizers()
    assert type(out["optimizer"]) is torch.optim.AdamW
    assert out["optimizer"].defaults["weight_decay"] == torch.optim.AdamW([torch.zeros(1)]).defaults["weight_decay"]
    assert out["lr_scheduler"]["interval"] == "step"


def test_a_task_without_its_hooks_says_what_to_implement():
    class Empty(MoETaskModule):
        pass

    with pytest.raises(NotImplementedError, match="Empty must implement step_loss"):
        Empty().training_step(batch(), 0)
    with pytest.raises(NotImplementedError, match="Empty must implement evaluate"):
        Empty().validation_step(batch(), 0)
    assert Empty().extra_results() == {}


def test_the_base_names_no_task():
    tree = ast.parse(inspect.getsource(zoo.task_module))
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert not any(name.startswith("zoo_tasks") for name in imported), imported
    assert issubclass(MoETaskModule, pl.LightningModule)
