"""zoo_tasks.graphs.baselines: GMoE's dense mixture equals the reference sum, numbers as before, GCN/GAT shapes."""

from __future__ import annotations

import pytest
import torch
from torch_geometric.data import Batch

from zoo.errors import ConfigError
from zoo.moe import cv_squared_loss
from zoo_tasks.graphs.baselines import DenseGNN, GMoE, GMoELayer


def test_gmoe_layer_output_is_the_mean_over_e_of_its_routed_experts(two_cliques):
    """As the authors' code: ``(gates * experts).mean(dim=1)``, i.e. the routed sum divided by E."""
    torch.manual_seed(0)
    graph, _ = two_cliques()
    layer = GMoELayer(8, 5, num_experts=4, num_hop1=2, top_k=2, router="topk").eval()
    out, routing, experts = layer(graph.x, graph.edge_index, graph.edge_index_2hop)
    assert out.shape == (graph.num_nodes, 5) and experts.shape == (graph.num_nodes, 4, 5)
    assert routing.num_tokens == graph.num_nodes and routing.indices.shape == (graph.num_nodes, 2)
    reference = torch.zeros_like(out)
    for i in range(graph.num_nodes):
        for slot in range(2):
            reference[i] += routing.weights[i, slot] * experts[i, routing.indices[i, slot]] / 4
    assert torch.allclose(out, reference, atol=1e-6)
    conv0 = layer.norms[0](layer.convs[0](graph.x, graph.edge_index))  # expert 0 is a hop-1 GCN
    assert torch.allclose(experts[:, 0], conv0, atol=1e-6)
    assert not hasattr(layer, "last_routing") and not hasattr(layer, "last_expert_outputs")


def test_gmoe_forward_matches_values_pinned_at_the_reference_mixture(two_cliques):
    """Same RNG draws (noisy top-k noise, dropout) and maths as GMoE at commit 12e7f0bc (values printed there: the
    reference's mean over experts and unbiased cv²; the routing and the RNG draws are those of commit 79e6fd0, whose
    balance loss was this one's 3/4)."""
    graph, _ = two_cliques()
    torch.manual_seed(0)
    model = GMoE(8, 3, hidden=8, num_experts=4, num_hop1=2, top_k=2)
    out = model(graph.x, graph.edge_index, graph.edge_index_2hop)
    assert out.log_probs.sum().item() == pytest.approx(-39.55692672729492, abs=1e-5)
    first = [-1.1215752363204956, -1.0789780616760254, -1.095743179321289]
    assert out.log_probs[0].tolist() == pytest.approx(first, abs=1e-6)
    assert out.aux_loss.item() == pytest.approx(4 / 3 * 0.0012042131274938583, rel=1e-5)


@pytest.mark.parametrize("level", ["node", "graph"])
def test_gmoe_and_dense_gnn_shapes_routings_and_aux_loss(level, two_cliques):
    torch.manual_seed(0)
    graph, _ = two_cliques()
    data = Batch.from_data_list([graph, graph]) if level == "graph" else graph
    T, C = (2 if level == "graph" else graph.num_nodes), 3
    args = (data.x, data.edge_index, data.edge_index_2hop, data.batch if level == "graph" else None)
    gmoe = GMoE(8, C, hidden=16, num_layers=3, num_experts=4, num_hop1=2, top_k=2, level=level, balance_weight=0.1)
    out = gmoe(*args)
    assert out.log_probs.shape == (T, C) and out.expert_outputs.shape == (
        data.num_nodes,
        4,
        16 if level == "graph" else C,
    )
    assert list(out.routings) == ["layers.0", "layers.1", "layers.2"] and out.routing is out.routings["layers.2"]
    assert all(r.num_tokens == data.num_nodes for r in out.routings.values())
    mean_cv = sum(cv_squared_loss(r) for r in out.routings.values()) / 3
    assert out.aux["balance"].item() == pytest.approx(mean_cv.item(), rel=1e-6)
    # the loss is the reference's unbiased cv²: E / (E - 1) x zoo.moe's biased one that "balance" logs
    assert out.aux_loss.item() == pytest.approx(0.1 * 4 / 3 * mean_cv.item(), rel=1e-6)
    for kind in ("gcn", "gat"):
        dense = DenseGNN(kind, 8, C, hidden=16, heads=4, level=level)(*args)
        assert dense.log_probs.shape == (T, C) and dense.routings == {} and dense.routing is None


def test_gmoe_passes_router_and_router_kwargs_to_every_layer():
    model = GMoE(8, 3, hidden=8, num_layers=3, router="dtop_p", router_kwargs={"max_k": 2})
    assert [type(layer.router).__name__ for layer in model.layers] == ["DTopPRouter"] * 3
    assert [layer.router.max_k for layer in model.layers] == [2, 2, 2]


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: GMoE(8, 3, num_experts=4, num_hop1=5), r"num_hop1=5 is not valid; choose from 0 .. num_experts=4"),
        (lambda: GMoE(8, 3, level="edge"), r"level='edge' is not valid; choose from node, graph"),
        (lambda: GMoE(8, 3, pool="max"), r"pool='max' is not valid; choose from mean, sum"),
        (lambda: GMoE(8, 3, num_layers=0), r"num_layers must be >= 1"),
        (lambda: GMoE(8, 3, router="nope"), r"unknown router 'nope'"),
        (lambda: GMoE(8, 3, level="graph", router="expert_choice"), r"cannot route GMoE's graph-level node gate"),
        (lambda: DenseGNN("gcn", 8, 3, level="edge"), r"level='edge'"),
        (lambda: DenseGNN("mlp", 8, 3), r"unknown expert kind 'mlp'"),
    ],
)
def test_baselines_bad_config_raises_config_error(make, match):
    with pytest.raises(ConfigError, match=match):
        make()
