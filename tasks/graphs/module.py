"""LightningModules for node and graph classification; the network (GCN, GAT, GMoE, C2GMoE) is chosen by config."""

from __future__ import annotations

from pathlib import Path

import pytorch_lightning as pl
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from zoo_tasks.graphs.baselines import DenseGNN, GMoE
from zoo_tasks.graphs.c2gmoe import C2GMoE
from zoo_tasks.graphs.diagnostics import DiagnosticsAccumulator
from zoo_tasks.graphs.output import GraphModelOutput

MODELS = ("gcn", "gat", "gmoe", "c2gmoe")


class _GraphTaskModule(pl.LightningModule):
    """Shared training logic; subclasses fix ``level`` ("node" or "graph").

    ``in_dim`` / ``num_classes`` left at 0 are read from the datamodule in ``setup`` (and then saved in the
    hyperparameters, so ``load_from_checkpoint`` rebuilds the same network).

    Loss: NLL of the model's prediction + ``expert_loss_weight`` x mean NLL of each C2GMoE expert's own
    prediction (keeps every expert a calibrated classifier, which confidence-aware fusion relies on) + the
    model's weighted aux losses (cv^2 balance; C2GMoE's contrastive routing).

    Args:
        model: ``"gcn"``, ``"gat"`` (:class:`~zoo_tasks.graphs.baselines.DenseGNN`), ``"gmoe"``
            (:class:`~zoo_tasks.graphs.baselines.GMoE`) or ``"c2gmoe"`` (:class:`~zoo_tasks.graphs.c2gmoe.C2GMoE`; the
            ablations are c2gmoe with ``contrastive_weight=0`` or ``confidence="none"``).
        hidden, num_layers, dropout, heads, pool: network sizes (``heads``: GAT; ``pool``: graph readout).
        expert_kinds: C2GMoE experts (see :data:`zoo_tasks.graphs.experts.EXPERT_KINDS`).
        num_experts, num_hop1, batch_norm: GMoE experts per layer, how many are hop-1, BatchNorm per expert.
        top_k, router, router_hidden: routing (``router`` is a ``zoo.moe`` router name).
        confidence, contrastive_weight, balance_weight, num_clusters, temperature, router_norm: C2GMoE (see its
            docstring).
        expert_loss_weight: weight of the per-expert NLL (C2GMoE).
        lr, weight_decay: Adam.
        diagnostics: collect routing diagnostics and plots at test time (``extra_results()``).
    """

    level = "node"
    checkpoint_monitor = "val/acc"
    checkpoint_mode = "max"

    def __init__(
        self,
        model: str = "c2gmoe",
        in_dim: int = 0,
        num_classes: int = 0,
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
        if model not in MODELS:
            raise ValueError(f"unknown model {model!r}; choose from {', '.join(MODELS)}")
        self.save_hyperparameters()
        self.net: nn.Module | None = None
        self.diag = DiagnosticsAccumulator()
        self._extra: dict = {}
        if in_dim > 0 and num_classes > 0:
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
        if h.model == "gmoe":
            return GMoE(
                num_experts=h.num_experts,
                num_hop1=h.num_hop1,
                top_k=h.top_k,
                router=h.router,
                balance_weight=h.balance_weight,
                batch_norm=h.batch_norm,
                **common,
            )
        kinds = list(h.expert_kinds or ["gcn", "gcn2", "gat", "gcn"])
        return C2GMoE(
            expert_kinds=kinds,
            heads=h.heads,
            router=h.router,
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
        dm = self.trainer.datamodule if self.trainer is not None else None
        if dm is None or not hasattr(dm, "num_features"):
            raise RuntimeError("in_dim/num_classes are 0 and no datamodule provides num_features/num_classes")
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

    def training_step(self, batch, batch_idx: int) -> Tensor:
        out = self(batch)
        y, mask = self.targets(batch, "train")
        loss, parts = self._loss(out, y, mask)
        n = int(mask.sum()) if mask is not None else y.shape[0]
        self.log("train/loss", loss, batch_size=n, prog_bar=True)
        for name, value in {**parts, **out.aux}.items():
            self.log(f"train/{name}", value, batch_size=n)
        return loss

    def _evaluate(self, batch, stage: str) -> tuple[GraphModelOutput, Tensor, Tensor | None]:
        out = self(batch)
        y, mask = self.targets(batch, stage)
        pred = out.log_probs.argmax(-1)
        correct = pred == y
        sel = correct[mask] if mask is not None else correct
        n = sel.numel()
        self.log(f"{stage}/acc", sel.float().mean(), batch_size=n, prog_bar=stage == "val")
        loss = F.nll_loss(
            out.log_probs[mask] if mask is not None else out.log_probs, y[mask] if mask is not None else y
        )
        self.log(f"{stage}/loss", loss, batch_size=n)
        return out, correct, mask

    def validation_step(self, batch, batch_idx: int) -> None:
        self._evaluate(batch, "val")

    def on_test_epoch_start(self) -> None:
        self.diag = DiagnosticsAccumulator()

    def test_step(self, batch, batch_idx: int) -> None:
        out, correct, mask = self._evaluate(batch, "test")
        if not self.hparams.diagnostics or out.routing is None:
            return
        if self.level == "node":
            # routing covers all nodes; keep the test nodes only
            out = _select_nodes(out, mask)
            self.diag.update(out, correct[mask])
        else:
            routed_nodes = out.routing.num_tokens != correct.shape[0]
            self.diag.update(out, correct, batch.batch if routed_nodes else None)

    def on_test_epoch_end(self) -> None:
        if not self.diag:
            self._extra = {}
            return
        summary = self.diag.compute()
        for key in ("homogeneity", "load_entropy", "routing_entropy", "entropy_correctness_corr"):
            if key in summary:
                self.log(f"test/diag_{key}", float(summary[key]))
        folder = Path(self._log_dir()) / "diagnostics"
        summary["plots"] = self.diag.plot(folder, title=self.hparams.model)
        self._extra = {"diagnostics": summary}

    def _log_dir(self) -> str:
        trainer = self.trainer
        return (trainer.log_dir if trainer.log_dir else None) or trainer.default_root_dir

    def extra_results(self) -> dict:
        """Diagnostics of the last test run: homogeneity, similarity matrix, load, entropy/correctness, plots."""
        return self._extra

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr, weight_decay=self.hparams.weight_decay)


def _select_nodes(out: GraphModelOutput, mask: Tensor) -> GraphModelOutput:
    """Restrict a node-level output's routing and expert outputs to the nodes in ``mask`` (N,) bool."""
    r = out.routing
    routing = type(r)(
        r.indices[mask], r.weights[mask], r.logits[mask], None, probs=r.probs[mask] if r.probs is not None else None
    )
    experts = out.expert_outputs[:, mask] if out.expert_outputs is not None else None
    return GraphModelOutput(out.log_probs[mask], out.aux_loss, routing=routing, expert_outputs=experts)


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
