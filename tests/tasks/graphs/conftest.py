"""Graph-task tests: a tiny two-cluster graph."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("torch_geometric")

from torch_geometric.data import Data  # noqa: E402

from zoo_tasks.graphs.experts import AddTwoHopEdges  # noqa: E402


def make_two_cliques(n: int = 6, dim: int = 8, seed: int = 0) -> tuple[Data, torch.Tensor]:
    """Two n-cliques joined by one edge; features = cluster offset + noise. Returns the graph (with 2-hop edges)
    and the true cluster of each node."""
    g = torch.Generator().manual_seed(seed)
    edges = [(i, j) for c in range(2) for i in range(c * n, (c + 1) * n) for j in range(c * n, (c + 1) * n) if i != j]
    edges += [(n - 1, n), (n, n - 1)]
    offset = torch.zeros(2, dim)
    offset[0, 0], offset[1, 1] = 3.0, 3.0
    truth = torch.arange(2 * n) // n
    x = offset[truth] + 0.3 * torch.randn(2 * n, dim, generator=g)
    return AddTwoHopEdges()(Data(x=x, edge_index=torch.tensor(edges).t())), truth


@pytest.fixture
def two_cliques():
    """``make_two_cliques`` (call it: ``graph, truth = two_cliques()``)."""
    return make_two_cliques
