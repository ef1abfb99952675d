"""LightningModule for binary MIL: [instance encoder] -> projection (linear | MAMMOTH) -> aggregator -> bag logit.

MAMMOTH: "Mixture of Mini Experts: Overcoming the Linear Layer Bottleneck in Multiple Instance Learning" (ICLR 2026);
aggregators after Ilse, Tomczak & Welling, "Attention-based Deep Multiple Instance Learning" (ICML 2018,
arXiv 1802.04712) and the papers cited in :mod:`zoo_tasks.mil.aggregators`.
"""

from __future__ import annotations

import time
from typing import NamedTuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torchmetrics.classification import BinaryAccuracy, BinaryAUROC

from zoo.errors import ConfigError, ZooError
from zoo.moe import ROUTERS as ALL_ROUTERS
from zoo.moe.routing import Routing
from zoo.registry import repository_root
from zoo.task_module import MoETaskModule, StepLoss
from zoo_tasks.mil.aggregators import make_aggregator
from zoo_tasks.mil.encoders import DigitsEncoder
from zoo_tasks.mil.mammoth import ROUTERS, Mammoth

PROJECTIONS = ("linear", "mammoth", "mammoth_pkg")
ENCODERS = ("none", "digits_cnn")


class MILOutput(NamedTuple):
    """:meth:`MILModule.forward`'s result: bag ``logits`` (B,), per-instance ``scores`` (B, N) or None (attention or
    instance logits, for plots), ``routing`` {layer name: Routing} (empty without a mixture, and for the published
    package, which exposes no combine weights), ``dispatch``: the projection's dispatch weights, (B, N, H, E, S)
    for ours, a list of per-bag (n_i, E, H, S) for the package, None for the linear layer (see :meth:`bag_dispatch`)."""

    logits: Tensor
    scores: Tensor | None
    routing: dict[str, Routing]
    dispatch: Tensor | list[Tensor] | None

    def bag_dispatch(self, i: int, mask: Tensor) -> Tensor:
        """Bag ``i``'s detached dispatch weights over its real instances, (n_i, E, H, S)."""
        if isinstance(self.dispatch, list):
            return self.dispatch[i].detach()
        return self.dispatch[i, mask[i]].permute(0, 2, 1, 3).detach()


def _check_router(router: str, router_kwargs: dict | None) -> None:
    """MAMMOTH's Soft-MoE slots are its router: only ``ROUTERS`` (``"soft"``) applies, without router_kwargs."""
    if router not in ALL_ROUTERS:
        raise ConfigError(f"model.router: unknown router {router!r}; valid: {', '.join(sorted(ALL_ROUTERS))}")
    if router not in ROUTERS:
        raise ConfigError(
            f"model.router: router {router!r} cannot route MAMMOTH's Soft-MoE slots (every instance reaches every "
            f"expert through softmax-weighted slots; there is no per-token expert choice to make); routers that "
            f"apply: {', '.join(ROUTERS)}"
        )
    if router_kwargs:
        raise ConfigError(
            f"model.router_kwargs: MAMMOTH's slot router takes no arguments, got {sorted(router_kwargs)} "
            "(its size is set by num_experts, num_slots, num_heads, slot_dim)"
        )


class MILModule(MoETaskModule):
    """A MIL classifier whose task-specific linear layer can be swapped for MAMMOTH (ICLR 2026).

    ``projection="linear"`` is the standard MIL layer ``ReLU(Dropout(W x + b))`` (the dense baseline);
    ``"mammoth"`` is :class:`zoo_tasks.mil.mammoth.Mammoth` with about the same parameter count;
    ``"mammoth_pkg"`` is the published ``mammoth-moe`` module (:class:`zoo_tasks.mil.mammoth_pkg.PackageMammoth`).
    The aggregator is one of ``zoo_tasks.mil.aggregators.AGGREGATORS`` (mean, max, abmil, gated_abmil, dsmil).

    ``router`` is the ``zoo.moe`` router name of the mixture; MAMMOTH's Soft-MoE slots are their own router, so
    only ``"soft"`` applies (any other name, or ``router_kwargs``, raises ConfigError).

    ``in_dim=None`` means "from the data": ``zoo fit`` fills it from the datamodule's ``model_shapes()``, and a
    model built without it takes the datamodule's feature width in :meth:`setup` (the layers are built then).

    Batches are dicts from :mod:`zoo_tasks.mil.mil_data`: ``x`` (B, N, in_dim), ``mask`` (B, N), ``y`` (B,).
    Logs ``train/loss``, ``val/{loss,acc,auc}`` when the datamodule has validation bags, and ``test/{loss,acc,auc}``
    (bag level). Steps return ``{"loss": ..., "routing": {"projection": Routing}}`` for the routing-stats callback.
    The checkpoint kept as best is the one with the lowest ``val/loss`` (``checkpoint_monitor``); without
    validation bags there is no model selection and the last epoch is tested (the benchmark's protocol).
    """

    checkpoint_monitor = "val/loss"
    checkpoint_mode = "min"
    progress_bar = ()
    train_metrics_per_epoch = True

    def __init__(
        self,
        in_dim: int | None = None,
        aggregator: str = "abmil",
        projection: str = "linear",
        dim: int = 128,
        encoder: str = "none",
        num_experts: int = 8,
        num_slots: int = 4,
        num_heads: int = 4,
        slot_dim: int = 64,
        rank: int | None = None,
        dropout: float = 0.1,
        aggregator_dropout: float = 0.0,
        lr: float = 5e-4,
        weight_decay: float = 1e-4,
        plot_bags: int = 3,
        router: str = "soft",
        router_kwargs: dict | None = None,
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        if projection not in PROJECTIONS:
            raise ConfigError(f"unknown projection {projection!r}; valid: {', '.join(PROJECTIONS)}")
        _check_router(router, router_kwargs)
        if encoder not in ENCODERS:
            raise ConfigError(f"unknown encoder {encoder!r}; valid: {', '.join(ENCODERS)}")
        if in_dim is not None:
            self._build(in_dim)  # here, so parameters are created in the same order (same RNG draws) as always
        self.test_acc, self.test_auc = BinaryAccuracy(), BinaryAUROC()
        self.val_acc, self.val_auc = BinaryAccuracy(), BinaryAUROC()
        self._epoch_start = 0.0
        self._epoch_times: list[float] = []
        self._plot_batch: dict[str, Tensor] | None = None
        self._plot_path: str | None = None

    def _build(self, in_dim: int) -> None:
        """The encoder, projection and aggregator for ``in_dim`` features per instance."""
        hp = self.hparams
        if hp.encoder == "digits_cnn" and in_dim != 64:
            raise ConfigError(f"model.encoder 'digits_cnn' reads flattened 8x8 images: in_dim must be 64, got {in_dim}")
        self.encoder = DigitsEncoder() if hp.encoder == "digits_cnn" else None
        feat_dim = DigitsEncoder.out_dim if self.encoder is not None else in_dim
        moe_args = {k: hp[k] for k in ("num_experts", "num_slots", "num_heads", "slot_dim")}
        if hp.projection == "linear":
            self.projection = nn.Sequential(nn.Linear(feat_dim, hp.dim), nn.ReLU(), nn.Dropout(hp.dropout))
        elif hp.projection == "mammoth":
            self.projection = Mammoth(feat_dim, hp.dim, rank=hp.rank, dropout=hp.dropout, **moe_args)
        else:
            from zoo_tasks.mil.mammoth_pkg import PackageMammoth

            self.projection = PackageMammoth(feat_dim, hp.dim, dropout=hp.dropout, **moe_args)
        self.aggregator = make_aggregator(hp.aggregator, hp.dim, dropout=hp.aggregator_dropout)
        hp.in_dim = in_dim  # saved with checkpoints, so a model built from the data reloads

    def forward(self, x: Tensor, mask: Tensor) -> MILOutput:
        """(B, N, in_dim), (B, N) bool -> :class:`MILOutput` (bag logits (B,), instance scores, routing, dispatch)."""
        if x.shape[-1] != self.hparams.in_dim:
            raise ZooError(
                f"the bags have {x.shape[-1]} features per instance but model.in_dim is {self.hparams.in_dim}: "
                f"set --model.init_args.in_dim {x.shape[-1]}"
            )
        if self.encoder is not None:
            b, n, _ = x.shape
            x = self.encoder(x.reshape(b * n, -1)).reshape(b, n, -1)
        routing: dict[str, Routing] = {}
        dispatch = None
        if isinstance(self.projection, nn.Sequential):
            h = self.projection(x)
        elif isinstance(self.projection, Mammoth):
            h, routing["projection"], dispatch, _ = self.projection(x, mask)
        else:
            h, dispatch = self.projection(x, mask)
        logits, scores = self.aggregator(h, mask)
        return MILOutput(logits, scores, routing, dispatch)

    def setup(self, stage: str) -> None:
        width = getattr(getattr(self._trainer, "datamodule", None), "in_dim", None)
        if self.hparams.in_dim is None:
            if width is None:
                raise ConfigError("model.in_dim is not set and the datamodule does not give the feature width: set it")
            self._build(width)
        if width is not None and width != self.hparams.in_dim:
            raise ConfigError(
                f"model.in_dim is {self.hparams.in_dim} but the bags have {width} features per instance: "
                f"set --model.init_args.in_dim {width}"
            )

    def step_loss(self, batch: dict[str, Tensor]) -> StepLoss:
        out = self(batch["x"], batch["mask"])
        loss = F.binary_cross_entropy_with_logits(out.logits, batch["y"])
        return StepLoss(loss, out.routing, {"loss": loss}, len(batch["y"]))

    def evaluate(self, batch: dict[str, Tensor], batch_idx: int, stage: str, dataloader_idx: int = 0) -> dict:
        """Bag-level loss, accuracy and AUROC; the first test batch's bags are kept for the dispatch plot."""
        acc, auc = (self.val_acc, self.val_auc) if stage == "val" else (self.test_acc, self.test_auc)
        out = self(batch["x"], batch["mask"])
        y = batch["y"]
        probs = torch.sigmoid(out.logits)
        acc.update(probs, y.long())
        auc.update(probs, y.long())
        self.log_metrics(
            stage, {"loss": F.binary_cross_entropy_with_logits(out.logits, y), "acc": acc, "auc": auc}, len(y)
        )
        if stage == "test" and batch_idx == 0 and self.hparams.plot_bags > 0 and out.dispatch is not None:
            self._keep_plot_bags(batch, out)
        return out.routing

    def _keep_plot_bags(self, batch: dict[str, Tensor], out: MILOutput) -> None:
        y = batch["y"]
        pos, neg = (y == 1).nonzero().flatten().tolist(), (y == 0).nonzero().flatten().tolist()
        pick = (pos[:1] + neg[:1] + pos[1:] + neg[1:])[: self.hparams.plot_bags]  # both classes when present
        self._plot_batch = {k: v[pick].cpu() for k, v in batch.items()}
        self._plot_batch["probs"] = torch.sigmoid(out.logits)[pick].cpu()
        self._plot_batch["dispatch"] = [out.bag_dispatch(i, batch["mask"]).cpu().numpy() for i in pick]

    def on_test_end(self) -> None:
        if self._plot_batch is None or self.trainer is None:
            return
        from zoo_tasks.mil.plots import plot_dispatch

        path = plot_dispatch(self._plot_batch, self.log_folder().absolute() / "dispatch.png")
        root = repository_root()
        self._plot_path = str(path.relative_to(root) if path.is_relative_to(root) else path)

    def on_train_epoch_start(self) -> None:
        self._epoch_start = time.perf_counter()

    def on_train_epoch_end(self) -> None:
        self._epoch_times.append(time.perf_counter() - self._epoch_start)

    def extra_results(self) -> dict:
        """Projection size and rank, median seconds per training epoch, and the dispatch plot's path."""
        projection_params = sum(p.numel() for p in self.projection.parameters())
        return {
            "projection_params": projection_params,
            "rank": getattr(self.projection, "rank", None),
            "num_params": sum(p.numel() for p in self.parameters()),
            "train_epoch_s": float(np.median(self._epoch_times)) if self._epoch_times else None,
            "dispatch_plot": self._plot_path,
        }
