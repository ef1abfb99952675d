"""Baselines in the C²GMoE table: dense GCN and GAT, and GMoE (layer-wise routed hop-1/hop-2 GCN experts).

* GCN: Kipf & Welling, "Semi-Supervised Classification with Graph Convolutional Networks", ICLR 2017,
  arXiv:1609.02907 (Eq. 2: ``H' = sigma(D^-1/2 (A + I) D^-1/2 H W)``; the 2-layer model of Eq. 9).
* GAT: Velickovic et al., "Graph Attention Networks", ICLR 2018, arXiv:1710.10903 (Eqs. 1-6; 8 heads x 8 on Cora).
* GMoE: Wang et al., "Graph Mixture of Experts: Learning on Large-Scale Graphs with Explicit Diversity Modeling",
  NeurIPS 2023, arXiv:2304.02806 (Eq. 3: ``h_i' = sum_e g(h_i)_e E_e(h_i)`` with hop-1 and hop-2 experts; gate:
  noisy top-k of Shazeer et al. 2017, arXiv:1701.06538, Eqs. 3-5; aux loss: importance + load cv², Eqs. 6-10);
  reference code VITA-Group/Graph-Mixture-of-Experts.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from zoo.errors import ConfigError
from zoo.moe import Routing, combine_dense, make_router, weighted_aux_loss
from zoo_tasks.graphs.checks import check_choice
from zoo_tasks.graphs.experts import GNNExpert, edges_for, graph_head, input_dropout, make_conv, readout
from zoo_tasks.graphs.output import GraphModelOutput, unweighted_aux

LEVELS = ("node", "graph")
POOLS = ("mean", "sum")
# A graph-level mixture gates items of a mini-batch of graphs: the routing of one item must not depend on the
# other graphs in the batch (expert choice would make a test prediction depend on its batch-mates).
GRAPH_LEVEL_NEEDS = ("per_token_choice",)


class DenseGNN(nn.Module):
    """A plain GNN classifier: GCN (arXiv:1609.02907) or GAT (arXiv:1710.10903).

    Node level: ``GNNExpert(kind, in_dim, hidden, num_classes)`` gives (N, C) logits directly (the papers'
    2-layer Cora models: GCN hidden 16, GAT 8 heads x 8). Graph level: the GNN maps to ``hidden`` channels,
    nodes are pooled per graph (``pool``) and an MLP head gives (B, C).

    Shapes: x (N, in_dim), edge_index (2, m), batch (N,) for graph level -> log_probs (T, C).
    """

    def __init__(
        self,
        kind: str,
        in_dim: int,
        num_classes: int,
        hidden: int = 16,
        num_layers: int = 2,
        dropout: float = 0.5,
        heads: int = 8,
        level: str = "node",
        pool: str = "mean",
    ) -> None:
        super().__init__()
        check_choice("level", level, LEVELS)
        check_choice("pool", pool, POOLS)
        self.level, self.pool = level, pool
        self.gnn = GNNExpert(
            kind,
            in_dim,
            hidden,
            num_classes if level == "node" else hidden,
            num_layers=num_layers,
            dropout=dropout,
            heads=heads,
        )
        self.head = None
        if level == "graph":
            self.head = graph_head(hidden, num_classes, dropout)

    def forward(
        self, x: Tensor, edge_index: Tensor, edge_index_2hop: Tensor | None = None, batch: Tensor | None = None
    ) -> GraphModelOutput:
        out = self.gnn(x, edge_index, edge_index_2hop)
        if self.head is not None:
            if batch is None:
                batch = x.new_zeros(x.shape[0], dtype=torch.long)
            out = self.head(readout(F.relu(out), batch, self.pool))
        return GraphModelOutput(F.log_softmax(out, dim=-1), out.new_zeros(()))


def gmoe_aux_weights(balance_weight: float, num_experts: int) -> dict[str, float]:
    """GMoE's ``zoo.moe.weighted_aux_loss`` weights: the reference's balance loss ``coef * (cv²(importance) +
    cv²(load))`` with its unbiased variance over the E experts, which is E / (E - 1) times ``zoo.moe``'s biased cv²
    (one expert: cv² is 0 either way)."""
    unbiased = num_experts / (num_experts - 1) if num_experts > 1 else 1.0
    return {"cv_squared": balance_weight * unbiased}


class GMoELayerOutput(NamedTuple):
    """What a :class:`GMoELayer` returns: the mixture (N, out_dim), its `Routing` over the N nodes, and every
    expert's output (N, E, out_dim) (all experts run; the diagnostics compare them)."""

    output: Tensor
    routing: Routing
    expert_outputs: Tensor


class GMoELayer(nn.Module):
    """One GMoE layer (arXiv:2304.02806, Eq. 3) as the authors' code computes it:
    ``h_i' = (1 / E) sum_e g_ie * BN_e(conv_e(h))_i``.

    Experts are single graph convolutions, the first ``num_hop1`` on 1-hop edges and the rest on 2-hop edges; a
    ``zoo.moe`` router on each node's input (noisy top-k in the paper) weighs them. Every expert runs on the whole
    graph (message passing needs the neighbours' states), so the mixture is dense (``zoo.moe.combine_dense``),
    as in the reference code. The reference averages the gated experts over E (``(gates * experts).mean(dim=1)``,
    ``graphproppred/moe.py``) where the paper's Eq. 3 sums them; we follow the code (parity fixture
    ``tests/parity/test_gmoe.py``).

    Shapes: x (N, in_dim) -> :class:`GMoELayerOutput` (output (N, out_dim), routing over N, experts (N, E, out_dim)).
    """

    def __init__(
        self,
        in_dim: int,
        out_dim: int,
        num_experts: int = 4,
        num_hop1: int = 2,
        top_k: int = 1,
        router: str = "noisy_topk",
        batch_norm: bool = True,
        router_kwargs: dict | None = None,
        router_needs: tuple[str, ...] = (),
    ) -> None:
        super().__init__()
        if not 0 <= num_hop1 <= num_experts:
            raise ConfigError(f"num_hop1={num_hop1} is not valid; choose from 0 .. num_experts={num_experts}")
        self.kinds = ["gcn"] * num_hop1 + ["gcn2"] * (num_experts - num_hop1)
        self.convs = nn.ModuleList(make_conv(kind, in_dim, out_dim) for kind in self.kinds)
        self.norms = nn.ModuleList(nn.BatchNorm1d(out_dim) if batch_norm else nn.Identity() for _ in self.kinds)
        self.router = make_router(
            router,
            in_dim,
            num_experts,
            top_k=min(top_k, num_experts),
            mixture="GMoE's graph-level node gate",
            needs=router_needs,
            **(router_kwargs or {}),
        )

    def forward(self, x: Tensor, edge_index: Tensor, edge_index_2hop: Tensor | None = None) -> GMoELayerOutput:
        routing = self.router(x)
        outs = torch.stack(
            [
                norm(conv(x, edges_for(kind, edge_index, edge_index_2hop)))
                for kind, conv, norm in zip(self.kinds, self.convs, self.norms)
            ],
            dim=1,
        )  # (N, E, out_dim)
        return GMoELayerOutput(combine_dense(outs, routing) / len(self.kinds), routing, outs)


class GMoE(nn.Module):
    """GMoE network (arXiv:2304.02806): a stack of :class:`GMoELayer` (ReLU + dropout between layers).

    Node level: layers in_dim -> hidden -> ... -> num_classes (the last layer's expert outputs are class
    logits). Graph level: layers in_dim -> hidden ... -> hidden, pooled per graph, MLP head -> (B, C).
    Aux loss: ``zoo.moe.weighted_aux_loss`` over every layer's routing with ``{"cv_squared": balance_weight * E /
    (E - 1)}`` (mean over layers; coefficient 1e-2 in the reference code). The factor makes it the reference's loss:
    its cv² takes the unbiased variance over the E experts (torch ``var()``), ``zoo.moe``'s the biased one
    (Shazeer et al.'s), and the two differ by exactly E / (E - 1). The logged ``balance`` stays ``zoo.moe``'s cv²,
    comparable across tasks.

    Shapes: x (N, in_dim) -> :class:`~zoo_tasks.graphs.output.GraphModelOutput` with log_probs (T, C), routings
    ``{"layers.0": ..., "layers.1": ...}`` over the N nodes, expert_outputs (N, E, D) of the last layer.
    """

    def __init__(
        self,
        in_dim: int,
        num_classes: int,
        hidden: int = 64,
        num_layers: int = 2,
        num_experts: int = 4,
        num_hop1: int = 2,
        top_k: int = 1,
        router: str = "noisy_topk",
        dropout: float = 0.5,
        balance_weight: float = 0.01,
        batch_norm: bool = True,
        level: str = "node",
        pool: str = "mean",
        router_kwargs: dict | None = None,
    ) -> None:
        super().__init__()
        check_choice("level", level, LEVELS)
        check_choice("pool", pool, POOLS)
        if num_layers < 1:
            raise ConfigError(f"num_layers must be >= 1, got {num_layers}")
        self.level, self.pool, self.dropout = level, pool, dropout
        self.aux_weights = gmoe_aux_weights(balance_weight, num_experts)
        last = num_classes if level == "node" else hidden
        dims = [in_dim] + [hidden] * (num_layers - 1) + [last]
        self.layers = nn.ModuleList(
            GMoELayer(
                dims[i],
                dims[i + 1],
                num_experts,
                num_hop1,
                top_k,
                router,
                batch_norm=batch_norm and not (level == "node" and i == num_layers - 1),
                router_kwargs=router_kwargs,
                router_needs=GRAPH_LEVEL_NEEDS if level == "graph" else (),
            )
            for i in range(num_layers)
        )
        self.head = None
        if level == "graph":
            self.head = graph_head(hidden, num_classes, dropout)

    def forward(
        self, x: Tensor, edge_index: Tensor, edge_index_2hop: Tensor | None = None, batch: Tensor | None = None
    ) -> GraphModelOutput:
        routings: dict[str, Routing] = {}
        for i, layer in enumerate(self.layers):
            drop = input_dropout if i == 0 else F.dropout
            x, routings[f"layers.{i}"], expert_outputs = layer(
                drop(x, self.dropout, self.training), edge_index, edge_index_2hop
            )
            if i < len(self.layers) - 1 or self.head is not None:
                x = F.relu(x)
        if self.head is not None:
            if batch is None:
                batch = x.new_zeros(x.shape[0], dtype=torch.long)
            x = self.head(readout(x, batch, self.pool))
        return GraphModelOutput(
            F.log_softmax(x, dim=-1),
            weighted_aux_loss(routings, self.aux_weights),
            {"balance": unweighted_aux(routings, "cv_squared")},
            routings=routings,
            expert_outputs=expert_outputs,
        )
