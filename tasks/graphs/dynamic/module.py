"""LightningModules of the DyGMoCE task: the trained link predictors (DyGFormer, the dense twin, DyGMoCE) and
EdgeBank (no parameters, test only).

Training follows DyGLib's ``train_link_prediction.py``: BCE on sigmoid scores of positives (label 1) and
negatives (label 0), Adam at 1e-4; validation on val (transductive) and new-node val with random negatives; the
checkpoint with the best ``val/ap`` is tested. Reported metrics are per-batch AP/AUC averaged over batches
(``metrics.py``), named by ``data.metric_prefix``: ``test/ap``, ``test/ind_ap``, ``test/hist_ap``, ...
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytorch_lightning as pl
import torch
from torch import Tensor, nn

from zoo.errors import ConfigError
from zoo.moe import Routing
from zoo.task_module import MoETaskModule, StepLoss
from zoo_tasks.graphs.dynamic.edgebank import MEMORY_MODES, UCI_MEMORY, edge_memory
from zoo_tasks.graphs.dynamic.graphmixer import GraphMixerEncoder
from zoo_tasks.graphs.dynamic.metrics import batch_metrics
from zoo_tasks.graphs.dynamic.model import CurvatureMoEBlock, DyGFormerEncoder, MergeLayer
from zoo_tasks.graphs.dynamic.ranking import ranking_violation, ranking_violation_per_token
from zoo_tasks.graphs.dynamic.topology import recent_clustering, summarise

METHODS = ("dygformer", "twin", "dygmoce", "graphmixer")


class _Evaluation:
    """Per-loader lists of batch metrics, averaged at the end of an epoch (DyGLib's reporting)."""

    def __init__(self):
        self.rows: dict[int, list[dict]] = defaultdict(list)

    def add(self, loader: int, pos: np.ndarray, neg: np.ndarray) -> None:
        self.rows[loader].append(batch_metrics(pos, neg))

    def averaged(self, names: list[str]) -> dict[str, float]:
        out = {}
        for loader, rows in sorted(self.rows.items()):
            for key in ("ap", "auc"):
                out[f"{names[loader]}{key}"] = float(np.mean([r[key] for r in rows]))
        self.rows.clear()
        return out


VAL_NAMES = ["", "ind_"]


def data_summary(module: pl.LightningModule) -> dict:
    """The datamodule's split sizes and cleaning counts, for the run record (empty without a trainer)."""
    trainer = getattr(module, "_trainer", None)
    dm = getattr(trainer, "datamodule", None) if trainer is not None else None
    return {"data": dm.summary()} if dm is not None and hasattr(dm, "summary") else {}


class DynamicLinkPredictor(MoETaskModule):
    """DyGFormer-style link predictor (Yu et al., NeurIPS 2023) or DyGMoCE (ICML 2026) by ``method``.

    - ``dygformer``: DyGLib's DyGFormer blocks (dot-product MHA);
    - ``twin``: the DyGMoCE block with one Euclidean (κ = 0, fixed) expert per module, the dense twin;
    - ``graphmixer``: DyGLib's GraphMixer (``graphmixer.py``; needs ``data.init_args.neighbors: recent``);
    - ``dygmoce``: ``num_experts`` curvature experts per attention and FFN module, learnable κ initialised over
      [-max_abs_curvature, max_abs_curvature], routed per token by ``router`` with the ranking constraint
      (``ranking_weight``) and the ``zoo.moe`` aux losses in ``aux_weights``.
    Batch: ``data.py``'s dict; scores (B,) logits for positives and negatives.
    """

    checkpoint_monitor = "val/ap"
    checkpoint_mode = "max"
    synced_stages = ("train", "val", "test")

    def __init__(
        self,
        method: str = "dygmoce",
        node_dim: int | None = None,
        edge_dim: int | None = None,
        time_dim: int = 100,
        channel_dim: int = 50,
        patch_size: int = 1,
        num_layers: int = 2,
        heads: int = 2,
        dropout: float = 0.1,
        num_experts: int = 3,
        max_abs_curvature: float = 1.0,
        attention_impl: str = "fast",
        router: str = "soft",
        router_kwargs: dict | None = None,
        top_k: int = 2,
        ranking_weight: float = 0.1,
        aux_weights: dict[str, float] | None = None,
        lr: float = 1e-4,
        weight_decay: float = 0.0,
        num_neighbors: int = 20,
        topology_diagnostic: bool = True,
    ):
        super().__init__()
        if method not in METHODS:
            raise ConfigError(f"model method={method!r}; valid: {', '.join(METHODS)}")
        if attention_impl not in ("fast", "plain"):
            raise ConfigError(f"attention_impl={attention_impl!r}; valid: fast, plain")
        if node_dim is None or edge_dim is None:
            raise ConfigError("node_dim / edge_dim are unset: give them, or let the datamodule fill them (zoo fit)")
        self.save_hyperparameters()
        self.aux_weights = dict(aux_weights or {})
        block = "dygformer" if method == "dygformer" else "curvature"
        experts = num_experts if method == "dygmoce" else 1
        if method == "graphmixer":
            self.encoder = GraphMixerEncoder(node_dim, edge_dim, time_dim, num_neighbors, num_layers, dropout)
        else:
            self.encoder = DyGFormerEncoder(
                node_dim, edge_dim, time_dim, channel_dim, patch_size, num_layers, heads, dropout, block, experts,
                max_abs_curvature, True, attention_impl, router, router_kwargs, top_k,
            )  # fmt: skip
        self.predictor = MergeLayer(node_dim)
        self.loss_fn = nn.BCEWithLogitsLoss()
        self._eval = _Evaluation()
        self._unimodal: dict[str, list[float]] = defaultdict(list)
        self._profile: dict[str, list[Tensor]] = defaultdict(list)  # per test batch: summed sorted probs, count
        self._topology: dict[str, tuple[list, list]] = defaultdict(lambda: ([], []))

    # -- forward ---------------------------------------------------------------------------------------------
    def scores(self, batch: dict) -> tuple[Tensor, Tensor, dict[str, Routing]]:
        """(pos logits (B,), neg logits (B,), routings of the positive and negative passes)."""
        s, d, r_pos = self.encoder(batch["pos"])
        pos = self.predictor(s, d)
        s, d, r_neg = self.encoder(batch["neg"])
        neg = self.predictor(s, d)
        routings = {**{f"pos.{k}": v for k, v in r_pos.items()}, **{f"neg.{k}": v for k, v in r_neg.items()}}
        return pos, neg, routings

    def _moe_blocks(self) -> list[tuple[int, CurvatureMoEBlock]]:
        blocks = getattr(self.encoder, "blocks", [])
        return [(i, b) for i, b in enumerate(blocks) if isinstance(b, CurvatureMoEBlock) and b.routers]

    def _ranking(self, routings: dict[str, Routing]) -> Tensor:
        terms = []
        for i, block in self._moe_blocks():
            for part in ("attention", "ffn"):
                curv = block.curvatures(part)
                for key, r in routings.items():
                    if key.endswith(f"block{i}.{part}"):
                        terms.append(ranking_violation(r.router_probs(), curv, r.valid))
        return torch.stack(terms).mean() if terms else torch.zeros((), device=self.device)

    def step_loss(self, batch: dict) -> StepLoss:
        """BCE of positives and negatives + ``ranking_weight`` x the ranking violation + the weighted aux losses."""
        pos, neg, routings = self.scores(batch)
        bce = self.loss_fn(torch.cat([pos, neg]), torch.cat([torch.ones_like(pos), torch.zeros_like(neg)]))
        loss, logs = bce, {"bce": bce}
        if routings:
            rank = self._ranking(routings)
            loss = self.with_aux_loss(loss + self.hparams.ranking_weight * rank, routings)
            logs["ranking"] = rank
        return StepLoss(loss, routings, {**logs, "loss": loss}, len(pos))

    def evaluate(self, batch: dict, batch_idx: int, stage: str, dataloader_idx: int = 0) -> dict[str, Routing]:
        """Scores the batch's positives and negatives for the epoch's averaged AP / AUC (DyGLib's reporting); at
        test time also the routing's curvature order and, on the first loader, its link to the topology."""
        pos, neg, routings = self.scores(batch)
        self._eval.add(
            dataloader_idx, torch.sigmoid(pos).float().cpu().numpy(), torch.sigmoid(neg).float().cpu().numpy()
        )
        if stage == "test":
            self._test_diagnostics(batch, routings, dataloader_idx)
        return routings

    def on_validation_epoch_end(self) -> None:
        self.log_metrics("val", self._eval.averaged(VAL_NAMES))

    def _test_diagnostics(self, batch: dict, routings: dict[str, Routing], dataloader_idx: int) -> None:
        """Per MoE block and module: the fraction of unimodal routings, the mean weight per curvature rank, and
        (first loader) the expected curvature of each positive source node beside its clustering coefficient."""
        blocks = self._moe_blocks()
        topology = dataloader_idx == 0 and self.hparams.topology_diagnostic and blocks
        clustering = self._clustering(batch) if topology else None
        for i, block in blocks:
            for part in ("attention", "ffn"):
                r = routings.get(f"pos.block{i}.{part}")
                if r is None:
                    continue
                curv = block.curvatures(part)
                probs = r.router_probs()
                bad = ranking_violation_per_token(probs, curv)
                self._unimodal[f"block{i}.{part}"].append(float((bad <= 1e-6).float().mean()))
                ordered = probs[r.token_mask()][:, torch.argsort(curv.detach())].detach().double()
                count = ordered.new_tensor([len(ordered)])
                self._profile[f"block{i}.{part}"].append(torch.cat([ordered.sum(0), count]))
                if clustering is not None:
                    self._record_topology(f"block{i}.{part}", batch, r, curv, clustering)

    def _clustering(self, batch: dict) -> list[float]:
        """Clustering coefficient of each positive source node's recent neighbourhood (``topology.py``)."""
        finder = self.trainer.datamodule.full_finder
        seq_ids = batch["pos"]["src"]["ids"].cpu().numpy()
        src, ts = batch["ids"]["src"].cpu().numpy(), batch["ids"]["ts"].cpu().numpy()
        return [recent_clustering(finder, int(s), float(t), q) for s, t, q in zip(src, ts, seq_ids)]

    def _record_topology(self, name: str, batch: dict, routing: Routing, curv: Tensor, clustering: list) -> None:
        """Per positive source node: its routing's expected curvature (mean over the source side's tokens)."""
        b, length = batch["pos"]["src"]["pad"].shape
        ns = length // self.hparams.patch_size
        tokens = routing.router_probs().view(b, -1, routing.num_experts)[:, :ns]
        expected = (tokens @ curv.detach().to(tokens.dtype)).mean(1).cpu().numpy()
        store_c, store_e = self._topology[name]
        store_c.extend(clustering)
        store_e.extend(float(x) for x in expected)

    def on_test_epoch_end(self) -> None:
        self.log_metrics("test", self._eval.averaged(self.trainer.datamodule.test_names()))

    def extra_results(self) -> dict:
        """Learned curvature of every expert (per block and module, in expert order), the fraction of test
        tokens whose routing is unimodal in curvature order, and their mean routing weight per curvature rank."""
        curvatures = {}
        for i, block in enumerate(getattr(self.encoder, "blocks", [])):
            if isinstance(block, CurvatureMoEBlock):
                for part in ("attention", "ffn"):
                    curvatures[f"block{i}.{part}"] = [round(float(c), 5) for c in block.curvatures(part)]
        out = {"curvatures": curvatures} if curvatures else {}
        out.update(data_summary(self))
        if self._unimodal:
            out["unimodal_fraction"] = {k: round(float(np.mean(v)), 4) for k, v in self._unimodal.items()}
        if self._profile:
            out["routing_by_curvature_rank"] = {k: _mean_profile(v) for k, v in self._profile.items()}
        if self._topology:
            out["routing_vs_clustering"] = {k: summarise(*v) for k, v in self._topology.items()}
        return out


def _mean_profile(batches: list[Tensor]) -> list[float]:
    """Mean routing weight per expert rank (experts sorted by learned curvature, most negative first) over the
    test tokens of every batch; each entry of ``batches`` holds (E summed weights, token count)."""
    total = torch.stack(batches).sum(0)
    return [round(float(x), 5) for x in total[:-1] / total[-1].clamp_min(1)]


class EdgeBankPredictor(pl.LightningModule):
    """EdgeBank (Poursafaei et al., NeurIPS 2022), tested only (``trainer.max_epochs: 0``): each test batch is
    scored against the memory of train + val + earlier test edges (``edgebank.py``). ``memory``: one of
    ``edgebank.MEMORY_MODES``, or ``"dyglib"`` for DyGLib's best UCI choice per negative-sampling strategy."""

    trains_nothing = True  # `zoo fit` accepts max_epochs 0 for it (zoo.cli.lightning_cli)

    def __init__(self, memory: str = "dyglib", window: float = 0.15):
        super().__init__()
        if memory != "dyglib" and memory not in MEMORY_MODES:
            raise ConfigError(f"memory={memory!r}; valid: dyglib, {', '.join(MEMORY_MODES)}")
        self.save_hyperparameters()
        self._eval = _Evaluation()

    def training_step(self, batch: dict, batch_idx: int) -> None:
        """Never called (``max_epochs: 0``); Lightning requires the method to exist."""
        return None

    def _mode(self, loader: int) -> str:
        strategy = self.trainer.datamodule.strategies[loader // 2]
        return UCI_MEMORY[strategy] if self.hparams.memory == "dyglib" else self.hparams.memory

    def test_step(self, batch: dict, batch_idx: int, dataloader_idx: int = 0) -> None:
        dm = self.trainer.datamodule
        split, ids = dm.split, batch["ids"]
        upto = int(np.searchsorted(split.test.edge_ids, int(ids["edge_ids"][0])))
        cat = np.concatenate
        memory = edge_memory(
            cat([split.train.src, split.val.src, split.test.src[:upto]]),
            cat([split.train.dst, split.val.dst, split.test.dst[:upto]]),
            cat([split.train.ts, split.val.ts, split.test.ts[:upto]]),
            self._mode(dataloader_idx),
            self.hparams.window,
        )
        pos = np.array([p in memory for p in zip(ids["src"].tolist(), ids["dst"].tolist())], dtype=float)
        neg = np.array([p in memory for p in zip(ids["neg_src"].tolist(), ids["neg_dst"].tolist())], dtype=float)
        self._eval.add(dataloader_idx, pos, neg)

    def on_test_epoch_end(self) -> None:
        for key, value in self._eval.averaged(self.trainer.datamodule.test_names()).items():
            self.log(f"test/{key}", value, sync_dist=True)

    def extra_results(self) -> dict:
        return data_summary(self)

    def configure_optimizers(self):
        return None
