"""LightningModules for node and graph classification; the network (GCN, GAT, GIN, GMoE, C2GMoE) is chosen by config."""

from __future__ import annotations

from dataclasses import replace

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from zoo.errors import ConfigError
from zoo.moe import Routing
from zoo.task_module import MoETaskModule, StepLoss
from zoo_tasks.graphs.baselines import DenseGNN, GMoE
from zoo_tasks.graphs.c2gmoe import C2GMoE
from zoo_tasks.graphs.checks import check_choice
from zoo_tasks.graphs.diagnostics import DiagnosticsAccumulator
from zoo_tasks.graphs.gin import GIN
from zoo_tasks.graphs.output import GraphModelOutput

MODELS = ("gcn", "gat", "gin", "gmoe", "c2gmoe")


class _GraphTaskModule(MoETaskModule):
    """Shared training logic; subclasses fix ``level`` ("node" or "graph").

    ``in_dim`` / ``num_classes`` left unset (None, or 0 as older configs have it) come from the data: the ``zoo``
    CLI fills them from the datamodule's ``model_shapes()``, else they are read from the datamodule in ``setup``
    (and then saved in the hyperparameters, so ``load_from_checkpoint`` rebuilds the same network).

    Loss: NLL of the model's prediction + ``expert_loss_weight`` x mean NLL of each C2GMoE expert's own
    prediction (keeps every expert a calibrated classifier, which confidence-aware fusion relies on) + the
    model's weighted aux losses (cv^2 balance; C2GMoE's contrastive routing).

    Args:
        model: ``"gcn"``, ``"gat"`` (:class:`~zoo_tasks.graphs.baselines.DenseGNN`), ``"gin"`` (GIN-0,
            :class:`~zoo_tasks.graphs.gin.GIN`; ``num_layers`` GIN layers after the input), ``"gmoe"``
            (:class:`~zoo_tasks.graphs.baselines.GMoE`) or ``"c2gmoe"`` (:class:`~zoo_tasks.graphs.c2gmoe.C2GMoE`; the
            ablations are c2gmoe with ``contrastive_weight=0`` or ``confidence="none"``).
        hidden, num_layers, dropout, heads, pool: network sizes (``heads``: GAT; ``pool``: graph readout).
        expert_kinds: C2GMoE experts (see :data:`zoo_tasks.graphs.experts.EXPERT_KINDS`).
        num_experts, num_hop1, batch_norm: GMoE experts per layer, how many are hop-1, BatchNorm per expert.
        top_k, router, router_kwargs, router_hidden: routing of GMoE's layers and C²GMoE's gate (``router`` is a
            ``zoo.moe`` router name, ``router_kwargs`` its extra arguments).
        confidence, contrastive_weight, balance_weight, num_clusters, temperature, router_norm: C2GMoE (see its
            docstring).
        expert_loss_weight: weight of the per-expert NLL (C2GMoE).
        lr, weight_decay: Adam.
        diagnostics: collect routing diagnostics and plots at test time (``extra_results()``).

    Steps return ``{"loss": ..., "routing": {mixture: Routing}}`` (validation/test without "loss"); on the
    validation and test steps of node classification each routing's ``valid`` is the stage's node mask, so the
    routing statistics count the evaluated nodes only.
    """

    level = "node"
    checkpoint_monitor = "val/acc"
    checkpoint_mode = "max"
    progress_bar = ("train/loss", "val/acc")

    def __init__(
        self,
        model: str = "c2gmoe",
        in_dim: int | None = None,
        num_classes: int | None = None,
        hidden: int = 64,
        num_layers: int = 2,
        dropout: float = 0.5,
        heads: int = 8,
        pool: str = "mean",
        expert_kinds: list[str] | None = None,
        num_experts: int = 4,
        num_hop1: int = 2,
        top_k: int = 2,
        router: str = "noisy_topk",
        router_kwargs: dict | None = None,
        router_hidden: int = 64,
        confidence: str = "entropy",
        contrastive_weight: float = 0.1,
        balance_weight: float = 0.01,
        expert_loss_weight: float = 0.5,
        num_clusters: int = 0,
        temperature: float = 0.2,
        router_norm: bool = False,
        batch_norm: bool = True,
        lr: float = 0.01,
        weight_decay: float = 5e-4,
        diagnostics: bool = True,
    ) -> None:
        super().__init__()
        check_choice("model", model, MODELS)
        self.save_hyperparameters()
        self.net: nn.Module | None = None
        self.diag = DiagnosticsAccumulator()
        self._extra: dict = {}
        if in_dim and num_classes:
            self.net = self.build(in_dim, num_classes)

    def build(self, in_dim: int, num_classes: int) -> nn.Module:
        """The network named by ``hparams.model`` for ``in_dim`` features and ``num_classes`` classes."""
        h = self.hparams
        common = dict(
            in_dim=in_dim,
            num_classes=num_classes,
            hidden=h.hidden,
            num_layers=h.num_layers,
            dropout=h.dropout,
            level=self.level,
            pool=h.pool,
        )
        if h.model in ("gcn", "gat"):
            return DenseGNN(h.model, heads=h.heads, **common)
        if h.model == "gin":
            return GIN(**common)
        if h.model == "gmoe":
            return GMoE(
                num_experts=h.num_experts,
                num_hop1=h.num_hop1,
                top_k=h.top_k,
                router=h.router,
                router_kwargs=h.router_kwargs,
                balance_weight=h.balance_weight,
                batch_norm=h.batch_norm,
                **common,
            )
        kinds = list(h.expert_kinds or ["gcn", "gcn2", "gat", "gcn"])
        return C2GMoE(
            expert_kinds=kinds,
            heads=h.heads,
            router=h.router,
            router_kwargs=h.router_kwargs,
            top_k=h.top_k,
            router_hidden=h.router_hidden,
            confidence=h.confidence,
            contrastive_weight=h.contrastive_weight,
            balance_weight=h.balance_weight,
            num_clusters=h.num_clusters,
            temperature=h.temperature,
            router_norm=h.router_norm,
            **common,
        )

    def setup(self, stage: str | None = None) -> None:
        if self.net is not None:
            return
        dm = getattr(self._trainer, "datamodule", None)  # self.trainer raises when no trainer is attached
        if dm is None or not hasattr(dm, "num_features"):
            raise ConfigError("in_dim/num_classes are unset and no datamodule provides num_features/num_classes")
        dm.setup(stage)
        self.hparams.in_dim, self.hparams.num_classes = int(dm.num_features), int(dm.num_classes)
        self.net = self.build(self.hparams.in_dim, self.hparams.num_classes)

    def forward(self, batch) -> GraphModelOutput:
        return self.net(
            batch.x,
            batch.edge_index,
            getattr(batch, "edge_index_2hop", None),
            batch.batch if self.level == "graph" else None,
        )

    def targets(self, batch, stage: str) -> tuple[Tensor, Tensor | None]:
        """Labels and the item mask of ``stage`` (None: every item)."""
        raise NotImplementedError

    def _loss(self, out: GraphModelOutput, y: Tensor, mask: Tensor | None) -> tuple[Tensor, dict]:
        pick = (lambda t: t[mask]) if mask is not None else (lambda t: t)
        task = F.nll_loss(pick(out.log_probs), pick(y))
        parts = {"task": task}
        loss = task + out.aux_loss
        if out.expert_log_probs is not None and self.hparams.expert_loss_weight > 0:
            expert = torch.stack([F.nll_loss(pick(lp), pick(y)) for lp in out.expert_log_probs]).mean()
            parts["experts"] = expert
            loss = loss + self.hparams.expert_loss_weight * expert
        return loss, parts

    def step_loss(self, batch) -> StepLoss:
        out = self(batch)
        y, mask = self.targets(batch, "train")
        loss, parts = self._loss(out, y, mask)
        n = int(mask.sum()) if mask is not None else y.shape[0]
        return StepLoss(loss, out.routings, {"loss": loss, **parts, **out.aux}, n)

    def evaluate(self, batch, batch_idx: int, stage: str, dataloader_idx: int = 0) -> dict[str, Routing]:
        """Accuracy and NLL over the stage's items; at test time, the routing diagnostics of the last mixture."""
        out = self(batch)
        y, mask = self.targets(batch, stage)
        pred = out.log_probs.argmax(-1)
        correct = pred == y
        sel = correct[mask] if mask is not None else correct
        loss = F.nll_loss(
            out.log_probs[mask] if mask is not None else out.log_probs, y[mask] if mask is not None else y
        )
        self.log_metrics(stage, {"acc": sel.float().mean(), "loss": loss}, sel.numel())
        routings = self._stage_routings(out, mask)
        if stage == "test" and self.hparams.diagnostics and routings:
            routing = next(reversed(routings.values()))
            routed_nodes = self.level == "graph" and routing.num_tokens != correct.shape[0]
            self.diag.update(routing, correct, out.expert_outputs, batch.batch if routed_nodes else None)
        return routings

    def _stage_routings(self, out: GraphModelOutput, mask: Tensor | None) -> dict[str, Routing]:
        """The output's routings; node level: restricted (``valid``) to the evaluated nodes of ``mask``."""
        if mask is None:
            return out.routings
        return {name: replace(r, valid=mask) for name, r in out.routings.items()}

    def on_test_epoch_start(self) -> None:
        self.diag = DiagnosticsAccumulator()

    def on_test_epoch_end(self) -> None:
        if not self.diag:
            self._extra = {}
            return
        summary = self.diag.compute()
        keys = ("homogeneity", "load_entropy", "routing_entropy", "entropy_correctness_corr")
        self.log_metrics("test", {f"diag_{key}": float(summary[key]) for key in keys if key in summary})
        summary["plots"] = self.diag.plot(self.log_folder() / "diagnostics", title=self.hparams.model)
        self._extra = {"diagnostics": summary}

    def extra_results(self) -> dict:
        """Diagnostics of the last test run: homogeneity, similarity matrix, load, entropy/correctness, plots."""
        return self._extra


class NodeClassifier(_GraphTaskModule):
    """Transductive node classification (Planetoid public split) with GCN / GAT / GMoE / C2GMoE.

    Batch: one full graph with ``x`` (N, F), ``edge_index``, ``edge_index_2hop``, ``y`` (N,) and
    ``train_mask`` / ``val_mask`` / ``test_mask`` (N,) bool. Logs ``{train,val,test}/acc`` on the stage's mask.
    """

    level = "node"

    def targets(self, batch, stage: str) -> tuple[Tensor, Tensor | None]:
        return batch.y, getattr(batch, f"{stage}_mask")


class GraphClassifier(_GraphTaskModule):
    """Graph classification (TU datasets, k-fold CV) with GCN / GAT / GMoE / C2GMoE.

    Batch: a PyG ``Batch`` with ``x`` (N, F), ``edge_index``, ``edge_index_2hop``, ``batch`` (N,), ``y`` (B,).
    Logs ``{train,val,test}/acc`` over graphs.
    """

    level = "graph"

    def targets(self, batch, stage: str) -> tuple[Tensor, Tensor | None]:
        return batch.y, None
