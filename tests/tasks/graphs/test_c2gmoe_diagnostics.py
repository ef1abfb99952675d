"""zoo_tasks.graphs.diagnostics: expert similarity equals its loop definition; load and entropy come from
zoo.moe.routing_summary over the real (valid) items only; entropy vs correctness."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
import torch

from zoo.moe import Routing, routing_summary
from zoo_tasks.graphs.c2gmoe import C2GMoE
from zoo_tasks.graphs.diagnostics import DiagnosticsAccumulator, expert_similarity, homogeneity, routing_entropy


def test_expert_similarity_equals_the_itemwise_cosine_average():
    torch.manual_seed(0)
    outs = torch.randn(7, 3, 5)  # (T, E, D)
    cos = torch.nn.functional.cosine_similarity
    reference = torch.tensor([[cos(outs[:, e], outs[:, f], dim=-1).mean() for f in range(3)] for e in range(3)])
    assert torch.allclose(expert_similarity(outs), reference, atol=1e-6)
    same = torch.randn(10, 1, 4).expand(10, 3, 4)
    assert homogeneity(expert_similarity(same)) == pytest.approx(1.0, abs=1e-5)
    opposite = torch.cat([same[:, :1], -same[:, :1]], dim=1)
    assert homogeneity(expert_similarity(opposite)) == pytest.approx(-1.0, abs=1e-5)
    assert homogeneity(torch.ones(1, 1)) == 0.0


def test_accumulator_counts_only_valid_items_and_agrees_with_routing_summary(two_cliques):
    torch.manual_seed(0)
    graph, _ = two_cliques()
    model = C2GMoE(8, 2, ["gcn", "gcn2", "sage", "gin"], hidden=8, router_hidden=8).eval()
    out = model(graph.x, graph.edge_index, graph.edge_index_2hop)
    mask = torch.arange(graph.num_nodes) < 8
    routing = replace(out.routing, valid=mask)
    correct = torch.arange(graph.num_nodes) % 2 == 0
    acc = DiagnosticsAccumulator()
    acc.update(routing, correct, out.expert_outputs)
    summary = acc.compute()
    layer = routing_summary({"r": routing}).layers["r"]
    assert layer.tokens == 8
    assert summary["load"] == pytest.approx(layer.load) and sum(summary["load"]) == pytest.approx(1.0)
    assert summary["load_entropy"] == layer.load_entropy and summary["dead_experts"] == layer.dead_experts
    entropy = routing_entropy(out.routing.router_probs()[mask])
    assert summary["routing_entropy"] == pytest.approx(float(entropy.mean()), abs=1e-6)
    assert summary["routing_entropy_correct"] == pytest.approx(float(entropy[correct[mask]].mean()), abs=1e-6)
    sim = expert_similarity(out.expert_outputs[mask])
    assert torch.allclose(torch.tensor(summary["similarity"]), sim, atol=1e-6)
    assert summary["homogeneity"] == pytest.approx(homogeneity(sim), abs=1e-6)
    assert -1.0 <= summary["entropy_correctness_corr"] <= 1.0


def test_accumulator_maps_routed_nodes_to_their_graphs_correctness():
    E = 3
    logits = torch.tensor([[5.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [5.0, 0.0, 0.0]])
    routing = Routing(logits.argmax(-1, keepdim=True), torch.ones(4, 1), logits)
    acc = DiagnosticsAccumulator()
    acc.update(routing, torch.tensor([True, False]), item_batch=torch.tensor([0, 1, 1, 0]))
    summary = acc.compute()
    # sure routing on the correctly predicted graph's nodes, uniform routing on the wrong one's
    assert summary["routing_entropy_incorrect"] == pytest.approx(1.0, abs=1e-6)
    assert summary["routing_entropy_correct"] < 0.1 and summary["entropy_correctness_corr"] == pytest.approx(-1.0)
    assert summary["load"] == [1.0, 0.0, 0.0] and summary["dead_experts"] == E - 1
    assert math.isclose(summary["max_over_mean_load"], 3.0)
    with pytest.raises(ValueError, match="correctness flags"):
        acc.update(routing, torch.tensor([True]))
    assert DiagnosticsAccumulator().compute() == {}
