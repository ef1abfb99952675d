"""GIN-0 baseline: Xu et al., "How Powerful are Graph Neural Networks?", ICLR 2019, arXiv:1810.00826.

The model of the paper's TU protocol (Sec. 7, Table 1), as in its reference code (weihua916/powerful-gnns):
``num_layers`` GIN layers (Eq. 4.1 with ε = 0 fixed: ``h_v' = MLP((1 + ε) h_v + sum_{u in N(v)} h_u)``, the MLP
Linear-BN-ReLU-Linear, then BN and ReLU), and a readout over *every* depth, the input included (Eq. 4.2): each
depth's node features are sum-pooled per graph, mapped to class scores by its own linear layer (dropout on the
scores), and the scores of all depths are summed. The paper's "5 layers" counts the input, i.e. 4 GIN layers.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch_geometric.nn import GINConv

from zoo.errors import ConfigError
from zoo_tasks.graphs.checks import check_choice
from zoo_tasks.graphs.experts import readout
from zoo_tasks.graphs.output import GraphModelOutput

LEVELS = ("node", "graph")


class GIN(nn.Module):
    """GIN-0 with sum readout over layers (arXiv:1810.00826, Eqs. 4.1-4.2).

    Graph level: per-depth ``pool`` readout (sum in the paper) of h^0 .. h^L, one ``Linear`` per depth, scores
    summed -> (B, C). Node level: the same per-depth linear scores on the node features themselves (no pooling)
    -> (N, C), a jumping-knowledge reading of Eq. 4.2 for node classification.

    Shapes: x (N, in_dim), edge_index (2, m), batch (N,) -> log_probs (T, C); no routing.

    Args:
        in_dim, num_classes, hidden: channel sizes.
        num_layers: GIN layers (>= 1), not counting the input layer.
        dropout: on each depth's class scores (the paper's final dropout, 0 or 0.5).
        eps, train_eps: ε of Eq. 4.1 (GIN-0: 0, fixed; GIN-ε: learnt).
        pool: graph readout, ``"sum"`` (the paper) or ``"mean"``.
    """

    def __init__(
        self,
        in_dim: int,
        num_classes: int,
        hidden: int = 32,
        num_layers: int = 4,
        dropout: float = 0.5,
        level: str = "graph",
        pool: str = "sum",
        eps: float = 0.0,
        train_eps: bool = False,
    ) -> None:
        super().__init__()
        check_choice("level", level, LEVELS)
        if num_layers < 1:
            raise ConfigError(f"num_layers must be >= 1, got {num_layers}")
        self.level, self.pool, self.dropout = level, pool, dropout
        dims = [in_dim] + [hidden] * num_layers
        self.convs = nn.ModuleList()
        self.norms = nn.ModuleList()
        for i in range(num_layers):
            mlp = nn.Sequential(
                nn.Linear(dims[i], hidden), nn.BatchNorm1d(hidden), nn.ReLU(), nn.Linear(hidden, hidden)
            )
            self.convs.append(GINConv(mlp, eps=eps, train_eps=train_eps))
            self.norms.append(nn.BatchNorm1d(hidden))
        self.predict = nn.ModuleList(nn.Linear(d, num_classes) for d in dims)

    def forward(
        self, x: Tensor, edge_index: Tensor, edge_index_2hop: Tensor | None = None, batch: Tensor | None = None
    ) -> GraphModelOutput:
        if self.level == "graph" and batch is None:
            batch = x.new_zeros(x.shape[0], dtype=torch.long)
        hs = [x]
        for conv, norm in zip(self.convs, self.norms):
            hs.append(F.relu(norm(conv(hs[-1], edge_index))))
        score = 0
        for h, linear in zip(hs, self.predict):
            pooled = readout(h, batch, self.pool) if self.level == "graph" else h
            score = score + F.dropout(linear(pooled), self.dropout, self.training)
        return GraphModelOutput(F.log_softmax(score, dim=-1), score.new_zeros(()))
