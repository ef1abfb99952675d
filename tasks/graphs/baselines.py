"""Baselines in the C2GMoE table: dense GCN and GAT, and GMoE (layer-wise noisy top-k over hop-1/hop-2 GCNs)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from zoo.moe import make_router
from zoo.moe.losses import cv_squared_loss
from zoo_tasks.graphs.experts import GNNExpert, edges_for, graph_head, input_dropout, make_conv, readout
from zoo_tasks.graphs.output import GraphModelOutput


class DenseGNN(nn.Module):
    """A plain GNN classifier: GCN (Kipf & Welling, ICLR 2017) or GAT (Velickovic et al., ICLR 2018).

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
        if level not in ("node", "graph"):
            raise ValueError(f"level must be 'node' or 'graph', got {level!r}")
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


class GMoELayer(nn.Module):
    """One GMoE layer (Wang et al., "Graph Mixture of Experts", NeurIPS 2023; VITA-Group/Graph-Mixture-of-Experts).

    Experts are single graph convolutions, the first ``num_hop1`` on 1-hop edges and the rest on 2-hop edges;
    a noisy top-k router (Shazeer et al. 2017) on each node's input picks ``top_k`` of them and the layer
    returns ``sum_e g_ie * BN_e(conv_e(x))_i``. Every expert runs on the whole graph (message passing needs
    the neighbours' states), so dispatch is dense, as in the reference code. Aux loss: cv^2 of importance +
    load (``zoo.moe.losses.cv_squared_loss``).

    Shapes: x (N, in_dim) -> (N, out_dim); ``last_expert_outputs`` (E, N, out_dim); ``last_routing`` over N.
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
    ) -> None:
        super().__init__()
        if not 0 <= num_hop1 <= num_experts:
            raise ValueError(f"num_hop1 must be in [0, num_experts={num_experts}], got {num_hop1}")
        self.kinds = ["gcn"] * num_hop1 + ["gcn2"] * (num_experts - num_hop1)
        self.convs = nn.ModuleList(make_conv(kind, in_dim, out_dim) for kind in self.kinds)
        self.norms = nn.ModuleList(nn.BatchNorm1d(out_dim) if batch_norm else nn.Identity() for _ in self.kinds)
        self.router = make_router(router, in_dim, num_experts, top_k=min(top_k, num_experts))
        self.last_routing = None
        self.last_expert_outputs: Tensor | None = None

    def forward(self, x: Tensor, edge_index: Tensor, edge_index_2hop: Tensor | None = None) -> Tensor:
        routing = self.router(x)
        outs = torch.stack(
            [
                norm(conv(x, edges_for(kind, edge_index, edge_index_2hop)))
                for kind, conv, norm in zip(self.kinds, self.convs, self.norms)
            ]
        )  # (E, N, out_dim)
        self.last_routing, self.last_expert_outputs = routing, outs
        return torch.einsum("ne,end->nd", routing.dense_weights(), outs)


class GMoE(nn.Module):
    """GMoE network: a stack of :class:`GMoELayer` (ReLU + dropout between layers).

    Node level: layers in_dim -> hidden -> ... -> num_classes (the last layer's expert outputs are class
    logits). Graph level: layers in_dim -> hidden ... -> hidden, pooled per graph, MLP head -> (B, C).
    ``aux_loss = balance_weight * mean over layers of cv_squared_loss`` (coef 1e-2 in the reference code).
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
    ) -> None:
        super().__init__()
        if level not in ("node", "graph"):
            raise ValueError(f"level must be 'node' or 'graph', got {level!r}")
        self.level, self.pool, self.dropout, self.balance_weight = level, pool, dropout, balance_weight
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
            )
            for i in range(num_layers)
        )
        self.head = None
        if level == "graph":
            self.head = graph_head(hidden, num_classes, dropout)

    def forward(
        self, x: Tensor, edge_index: Tensor, edge_index_2hop: Tensor | None = None, batch: Tensor | None = None
    ) -> GraphModelOutput:
        balance = x.new_zeros(())
        for i, layer in enumerate(self.layers):
            drop = input_dropout if i == 0 else F.dropout
            x = layer(drop(x, self.dropout, self.training), edge_index, edge_index_2hop)
            balance = balance + cv_squared_loss(layer.last_routing)
            if i < len(self.layers) - 1 or self.head is not None:
                x = F.relu(x)
        if self.head is not None:
            if batch is None:
                batch = x.new_zeros(x.shape[0], dtype=torch.long)
            x = self.head(readout(x, batch, self.pool))
        balance = balance / len(self.layers)
        last = self.layers[-1]
        return GraphModelOutput(
            F.log_softmax(x, dim=-1),
            self.balance_weight * balance,
            {"balance": balance},
            routing=last.last_routing,
            expert_outputs=last.last_expert_outputs,
        )
