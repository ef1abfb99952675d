"""GNN experts and the graph helpers they need (two-hop edges, readout).

An expert *kind* names a message-passing operator and the edges it runs on:

========== ================================================================== =========================
kind       operator                                                           edges
========== ================================================================== =========================
``gcn``    ``GCNConv`` (Kipf & Welling, ICLR 2017, arXiv:1609.02907, Eq. 2)   1-hop ``edge_index``
``gcn2``   ``GCNConv``                                                        2-hop ``edge_index_2hop``
``gat``    ``GATConv`` (Velickovic et al., ICLR 2018, arXiv:1710.10903,       1-hop
           Eqs. 1-5), heads concatenated
``sage``   ``SAGEConv`` (Hamilton et al., NeurIPS 2017, arXiv:1706.02216,     1-hop
           Alg. 1), mean aggregation
``gin``    ``GINConv`` with a 2-layer MLP (Xu et al., ICLR 2019,              1-hop
           arXiv:1810.00826, Eq. 4.1)
``gin2``   ``GINConv``                                                        2-hop
========== ================================================================== =========================

Hop-2 experts follow GMoE (Wang et al., NeurIPS 2023, arXiv:2304.02806): they aggregate over the nodes two hops
away, given as a separate edge set built by :func:`two_hop_edge_index`.
"""

from __future__ import annotations

import warnings

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch_geometric.data import Data
from torch_geometric.nn import GATConv, GCNConv, GINConv, SAGEConv, global_add_pool, global_mean_pool
from torch_geometric.transforms import BaseTransform
from torch_geometric.utils import coalesce, remove_self_loops, to_undirected

from zoo.errors import ConfigError

EXPERT_KINDS = ("gcn", "gcn2", "gat", "sage", "gin", "gin2")
TWO_HOP_KINDS = ("gcn2", "gin2")


def two_hop_edge_index(edge_index: Tensor, num_nodes: int) -> Tensor:
    """(2, M) edges (i, j) with j reachable from i in exactly two steps of ``edge_index`` (2, m), i != j.

    Nodes that are also 1-hop neighbours are kept (as in GMoE's ``A^2`` construction); self-loops are removed.
    """
    if edge_index.numel() == 0:
        return edge_index.new_empty(2, 0)
    ones = torch.ones(edge_index.shape[1], device=edge_index.device)
    adj = torch.sparse_coo_tensor(edge_index, ones, (num_nodes, num_nodes), check_invariants=False).coalesce()
    with warnings.catch_warnings():  # torch's "sparse CSR support is in beta" notice, once per graph otherwise
        warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta", category=UserWarning)
        two = torch.sparse.mm(adj, adj).coalesce()
    out, _ = remove_self_loops(two.indices())
    return coalesce(out, num_nodes=num_nodes)


class AddTwoHopEdges(BaseTransform):
    """PyG transform storing :func:`two_hop_edge_index` as ``data.edge_index_2hop`` (batched like any ``*index``)."""

    def forward(self, data: Data) -> Data:
        data.edge_index_2hop = two_hop_edge_index(
            to_undirected(data.edge_index, num_nodes=data.num_nodes), data.num_nodes
        )
        return data


def input_dropout(x: Tensor, p: float, training: bool) -> Tensor:
    """``F.dropout`` that draws random numbers only for the non-zero entries of ``x``.

    Same distribution as ``F.dropout`` (a dropped zero is still zero), but on sparse bag-of-words inputs such as
    Cora's 2708 x 1433 features (1.3% non-zero) it avoids the dense Bernoulli draw that dominated a training step.
    """
    if not training or p == 0.0:
        return x
    nonzero = x != 0
    out = torch.zeros_like(x)
    out[nonzero] = F.dropout(x[nonzero], p, True)
    return out


def make_conv(
    kind: str, in_dim: int, out_dim: int, heads: int = 8, concat: bool = True, dropout: float = 0.0
) -> nn.Module:
    """One message-passing layer of an expert ``kind`` mapping (N, in_dim) -> (N, out_dim).

    For ``gat`` with ``concat=True`` the ``heads`` attention heads each produce ``out_dim // heads`` channels.
    """
    if kind not in EXPERT_KINDS:
        raise ConfigError(f"unknown expert kind {kind!r} (expert_kinds); choose from {', '.join(EXPERT_KINDS)}")
    if kind in ("gcn", "gcn2"):
        return GCNConv(in_dim, out_dim, cached=False)
    if kind == "gat":
        if concat and out_dim % heads:
            raise ConfigError(f"gat expert: width {out_dim} (hidden) must be divisible by heads={heads}")
        per_head = out_dim // heads if concat else out_dim
        return GATConv(in_dim, per_head, heads=heads, concat=concat, dropout=dropout)
    if kind == "sage":
        return SAGEConv(in_dim, out_dim)
    mlp = nn.Sequential(nn.Linear(in_dim, out_dim), nn.BatchNorm1d(out_dim), nn.ReLU(), nn.Linear(out_dim, out_dim))
    return GINConv(mlp, train_eps=True)


def edges_for(kind: str, edge_index: Tensor, edge_index_2hop: Tensor | None) -> Tensor:
    """The edge set an expert of ``kind`` aggregates over."""
    if kind in TWO_HOP_KINDS:
        if edge_index_2hop is None:
            raise ConfigError(f"expert kind {kind!r} needs edge_index_2hop: apply AddTwoHopEdges to the data")
        return edge_index_2hop
    return edge_index


class GNNExpert(nn.Module):
    """A ``num_layers``-deep GNN of one kind: (N, in_dim) node features -> (N, out_dim) node outputs.

    ReLU + dropout between layers, none after the last, so the last layer can emit class logits. ``gat``
    layers use ``heads`` concatenated heads except the last, which averages ``out_heads`` heads (GAT paper).

    Args:
        kind: one of :data:`EXPERT_KINDS`.
        in_dim, hidden, out_dim: channel sizes.
        num_layers: message-passing layers (>= 1).
        dropout: feature dropout before every layer (input dropout included, as in GCN/GAT on Cora).
    """

    def __init__(
        self,
        kind: str,
        in_dim: int,
        hidden: int,
        out_dim: int,
        num_layers: int = 2,
        dropout: float = 0.5,
        heads: int = 8,
        out_heads: int = 1,
    ) -> None:
        super().__init__()
        if num_layers < 1:
            raise ConfigError(f"num_layers must be >= 1, got {num_layers}")
        self.kind = kind
        self.dropout = dropout
        dims = [in_dim] + [hidden] * (num_layers - 1) + [out_dim]
        self.convs = nn.ModuleList()
        for i in range(num_layers):
            last = i == num_layers - 1
            self.convs.append(
                make_conv(
                    kind, dims[i], dims[i + 1], heads=out_heads if last else heads, concat=not last, dropout=dropout
                )
            )

    def forward(self, x: Tensor, edge_index: Tensor, edge_index_2hop: Tensor | None = None) -> Tensor:
        edges = edges_for(self.kind, edge_index, edge_index_2hop)
        for i, conv in enumerate(self.convs):
            x = (input_dropout if i == 0 else F.dropout)(x, self.dropout, self.training)
            x = conv(x, edges)
            if i < len(self.convs) - 1:
                x = F.elu(x) if self.kind == "gat" else F.relu(x)
        return x


def readout(x: Tensor, batch: Tensor, pool: str) -> Tensor:
    """(N, d) node features, (N,) graph ids -> (B, d) graph features by ``pool`` in {"mean", "sum"}."""
    if pool == "mean":
        return global_mean_pool(x, batch)
    if pool == "sum":
        return global_add_pool(x, batch)
    raise ConfigError(f"unknown pool {pool!r}; choose from mean, sum")


def graph_head(hidden: int, num_classes: int, dropout: float) -> nn.Sequential:
    """Graph-classification head on pooled features, (B, hidden) -> (B, num_classes) logits: Linear, ReLU,
    Dropout, Linear (the two-layer readout MLP of GMoE's and C²GMoE's reference code)."""
    return nn.Sequential(nn.Linear(hidden, hidden), nn.ReLU(), nn.Dropout(dropout), nn.Linear(hidden, num_classes))
