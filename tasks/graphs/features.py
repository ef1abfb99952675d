"""Node features of a graph-classification dataset: its own labels / attributes, one-hot degree, or a constant.

A TU dataset whose graphs carry no node labels or attributes (social networks such as IMDB-BINARY) needs
features made from the structure. GIN (Xu et al., "How Powerful are Graph Neural Networks?", ICLR 2019,
arXiv:1810.00826, Sec. 7) uses one-hot encodings of node degrees for such graphs (one column per degree seen in
the dataset) and all-equal features where degrees would be uninformative (REDDIT).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch_geometric.data import Data
from torch_geometric.utils import degree

from zoo_tasks.graphs.checks import check_choice

NODE_FEATURES = ("auto", "degree", "constant")


def node_degrees(graph: Data) -> torch.Tensor:
    """(N,) long: the number of edges leaving each node (TU edges are listed in both directions)."""
    return degree(graph.edge_index[0], graph.num_nodes, dtype=torch.long)


@dataclass(frozen=True)
class NodeFeatures:
    """How node features are made, fitted to one dataset.

    ``kind``: ``"own"`` (the dataset's ``x``, untouched), ``"degree"`` (one-hot of ``min(deg, max_degree)``,
    width ``max_degree + 1``) or ``"constant"`` (width 1). Call it on a graph to get the graph with that ``x``
    (N, width).
    """

    kind: str
    width: int
    max_degree: int = 0

    @classmethod
    def fit(cls, dataset, mode: str = "auto", max_degree: int | None = None) -> NodeFeatures:
        """The rule for ``mode`` in :data:`NODE_FEATURES` on ``dataset`` (a PyG dataset of graphs): ``"auto"`` is
        the dataset's own features when it has any, else degrees; ``max_degree=None`` takes the largest degree
        in the dataset (GIN: a column per degree), an int caps it (larger degrees share the last column)."""
        check_choice("node_features", mode, NODE_FEATURES)
        if mode == "auto" and dataset.num_features > 0:
            return cls("own", int(dataset.num_features))
        if mode == "constant":
            return cls("constant", 1)
        if max_degree is None:
            max_degree = max((int(node_degrees(g).max()) for g in dataset if g.num_nodes), default=0)
        return cls("degree", max_degree + 1, max_degree)

    def __call__(self, graph: Data) -> Data:
        if self.kind == "own":
            return graph
        graph = graph.clone()
        if self.kind == "constant":
            graph.x = torch.ones(graph.num_nodes, 1)
        else:
            deg = node_degrees(graph).clamp(max=self.max_degree)
            graph.x = torch.nn.functional.one_hot(deg, self.width).float()
        return graph
