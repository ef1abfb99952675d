"""zoo_tasks.graphs.experts: two-hop edges, expert kinds and their config errors, readout, sparse input dropout."""

from __future__ import annotations

import pytest
import torch

from zoo.errors import ConfigError
from zoo_tasks.graphs.experts import EXPERT_KINDS, GNNExpert, input_dropout, make_conv, readout, two_hop_edge_index


def test_two_hop_edges_of_a_path():
    path = torch.tensor([[0, 1, 1, 2, 2, 3], [1, 0, 2, 1, 3, 2]])
    two = two_hop_edge_index(path, 4)
    assert sorted(map(tuple, two.t().tolist())) == [(0, 2), (1, 3), (2, 0), (3, 1)]
    assert two_hop_edge_index(path[:, :0], 4).shape == (2, 0)


@pytest.mark.parametrize("kind", EXPERT_KINDS)
def test_every_expert_kind_maps_nodes_to_outputs(kind, two_cliques):
    torch.manual_seed(0)
    graph, _ = two_cliques()
    expert = GNNExpert(kind, 8, 8, 3, num_layers=2, heads=2)
    out = expert(graph.x, graph.edge_index, graph.edge_index_2hop)
    assert out.shape == (graph.num_nodes, 3) and torch.isfinite(out).all()


def test_readout_and_input_dropout():
    x = torch.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    batch = torch.tensor([0, 0, 1])
    assert torch.equal(readout(x, batch, "mean"), torch.tensor([[2.0, 3.0], [5.0, 6.0]]))
    assert torch.equal(readout(x, batch, "sum"), torch.tensor([[4.0, 6.0], [5.0, 6.0]]))
    sparse = torch.zeros(200, 50)
    sparse[::7, ::3] = 1.0
    torch.manual_seed(0)
    dropped = input_dropout(sparse, 0.5, True)
    assert (dropped[sparse == 0] == 0).all()  # zeros stay zero
    kept = dropped[sparse != 0]
    assert set(kept.unique().tolist()) <= {0.0, 2.0} and 0.4 < (kept == 0).float().mean() < 0.6
    assert input_dropout(sparse, 0.5, False) is sparse


def test_expert_config_errors(two_cliques):
    graph, _ = two_cliques()
    with pytest.raises(ConfigError, match=r"unknown expert kind 'transformer' \(expert_kinds\); choose from gcn, gcn2"):
        make_conv("transformer", 8, 8)
    with pytest.raises(ConfigError, match=r"width 10 \(hidden\) must be divisible by heads=4"):
        make_conv("gat", 8, 10, heads=4)
    with pytest.raises(ConfigError, match="num_layers must be >= 1"):
        GNNExpert("gcn", 8, 8, 3, num_layers=0)
    with pytest.raises(ConfigError, match="needs edge_index_2hop"):
        GNNExpert("gcn2", 8, 4, 3)(graph.x, graph.edge_index)
    with pytest.raises(ConfigError, match=r"unknown pool 'max'; choose from mean, sum"):
        readout(graph.x, torch.zeros(graph.num_nodes, dtype=torch.long), "max")
