"""zoo_tasks.graphs.c2gmoe: contrastive routing loss, expert confidence, confidence-aware fusion, the C²GMoE model."""

from __future__ import annotations

import pytest
import torch
from torch_geometric.data import Batch

from zoo.errors import ConfigError
from zoo.moe import Routing, make_router
from zoo.utils.kmeans import kmeans
from zoo_tasks.graphs.c2gmoe import C2GMoE, confidence_fusion, expert_confidence, group_contrastive_routing_loss


def within_between(probs: torch.Tensor, clusters: torch.Tensor) -> tuple[float, float]:
    d = torch.cdist(probs, probs)
    same = clusters[:, None] == clusters[None, :]
    off = ~torch.eye(len(clusters), dtype=torch.bool)
    return float(d[same & off].mean()), float(d[~same].mean())


def dense_routing(weights: torch.Tensor) -> Routing:
    """A Routing that gives every expert the (T, E) ``weights`` (0 where unused)."""
    T, E = weights.shape
    return Routing(torch.arange(E).expand(T, E).clone(), weights, weights.clamp_min(1e-9).log())


def test_contrastive_routing_pulls_clusters_together_and_apart(two_cliques):
    torch.manual_seed(0)
    graph, truth = two_cliques()
    clusters, _ = kmeans(graph.x, 2, generator=torch.Generator().manual_seed(0))
    assert (clusters == truth).all() or (clusters == 1 - truth).all()  # k-means finds the two semantic groups
    router = make_router("topk", graph.x.shape[1], 4, top_k=2)
    torch.nn.init.normal_(router.gate.weight, std=1.0)  # start from a routing that ignores the clusters
    opt = torch.optim.Adam(router.parameters(), lr=0.05)
    within0, between0 = within_between(router(graph.x).router_probs().detach(), clusters)
    losses = []
    for _ in range(40):
        loss = group_contrastive_routing_loss(router(graph.x).router_probs(), clusters, temperature=0.2)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    within1, between1 = within_between(router(graph.x).router_probs().detach(), clusters)
    assert losses[-1] < 0.5 * losses[0]
    assert within1 < 0.7 * within0
    assert between1 > between0


def test_contrastive_loss_equals_its_formula_and_rejects_bad_input():
    torch.manual_seed(0)
    probs = torch.softmax(torch.randn(6, 3, requires_grad=True), -1)
    clusters = torch.tensor([5, 5, 2, 2, 9, 9])
    z = probs / probs.norm(dim=-1, keepdim=True)
    proto = torch.stack([z[clusters == c].sum(0) for c in (2, 5, 9)])
    proto = proto / proto.norm(dim=-1, keepdim=True)
    target = torch.tensor([1, 1, 0, 0, 2, 2])
    expected = -torch.log_softmax(z @ proto.t() / 0.3, dim=-1)[torch.arange(6), target].mean()
    assert group_contrastive_routing_loss(probs, clusters, 0.3).item() == pytest.approx(expected.item(), abs=1e-6)
    one = group_contrastive_routing_loss(probs, torch.zeros(6, dtype=torch.long))
    assert one.item() == 0.0 and one.requires_grad
    with pytest.raises(ValueError, match="clusters"):
        group_contrastive_routing_loss(probs, torch.zeros(4, dtype=torch.long))
    with pytest.raises(ConfigError, match="temperature"):
        group_contrastive_routing_loss(probs, torch.arange(6), temperature=0.0)


def test_expert_confidence_entropy_and_margin():
    C = 5
    sure = torch.full((C,), -30.0)
    sure[2] = 0.0
    flat = torch.zeros(C)
    log_probs = torch.log_softmax(torch.stack([sure, flat])[:, None, :], -1)  # (E=2, T=1, C)
    ent = expert_confidence(log_probs, "entropy")
    margin = expert_confidence(log_probs, "margin")
    assert ent.shape == (1, 2) and margin.shape == (1, 2)
    assert ent[0, 0] == pytest.approx(1.0, abs=1e-4) and ent[0, 1] == pytest.approx(0.0, abs=1e-5)
    assert margin[0, 0] == pytest.approx(1.0, abs=1e-4) and margin[0, 1] == pytest.approx(0.0, abs=1e-6)
    with pytest.raises(ConfigError, match=r"confidence='variance'.*entropy, margin"):
        expert_confidence(log_probs, "variance")


def test_fusion_weights_follow_confidence_and_equal_the_reference_sum():
    T, C = 3, 4
    confident = torch.log_softmax(torch.tensor([[4.0, 0.0, 0.0, 0.0]]).expand(T, C), -1)
    unsure = torch.log_softmax(torch.tensor([[0.3, 0.2, 0.1, 0.0]]).expand(T, C), -1)
    expert_log_probs = torch.stack([unsure, confident])  # (E=2, T, C)
    router = torch.tensor([[0.5, 0.5], [0.7, 0.3], [0.2, 0.8]])
    conf = expert_confidence(expert_log_probs)
    log_probs, w = confidence_fusion(expert_log_probs, dense_routing(router), conf)
    reference = router * (conf + 1e-6)
    reference = reference / reference.sum(-1, keepdim=True)
    assert torch.allclose(w, reference, atol=1e-7)
    assert (w[:, 1] / w[:, 0] > router[:, 1] / router[:, 0]).all()  # the confident expert gains weight
    mixture = sum(w[:, e : e + 1] * expert_log_probs[e].exp() for e in range(2))
    assert torch.allclose(log_probs, mixture.log(), atol=1e-6)
    # router-only fusion (the ablation) keeps the router's weights
    _, w_router = confidence_fusion(expert_log_probs, dense_routing(router), None)
    assert torch.allclose(w_router, router)
    # an unselected expert (router weight 0) stays at 0 however confident it is
    _, w_sel = confidence_fusion(expert_log_probs, dense_routing(torch.tensor([[1.0, 0.0]]).expand(T, 2)), conf)
    assert (w_sel[:, 1] == 0).all()
    # padding items (routing.valid False) get no weight
    padded = dense_routing(router)
    padded.valid = torch.tensor([True, False, True])
    _, w_pad = confidence_fusion(expert_log_probs, padded, conf)
    assert (w_pad[1] == 0).all() and torch.allclose(w_pad[0], w[0])


def test_c2gmoe_forward_matches_values_pinned_before_the_zoo_moe_refactor(two_cliques):
    """Same RNG draws and maths as the model of commit 79e6fd0 (values printed there): records stay reproducible."""
    graph, _ = two_cliques()
    torch.manual_seed(0)
    model = C2GMoE(
        8, 3, ["gcn", "gcn2", "gat"], hidden=8, router_hidden=8, heads=2, contrastive_weight=0.5, router_norm=True
    )
    out = model(graph.x, graph.edge_index, graph.edge_index_2hop)
    assert out.log_probs.sum().item() == pytest.approx(-47.408390045166016, abs=1e-5)
    assert out.log_probs[0].tolist() == pytest.approx(
        [-1.0532870292663574, -1.0469510555267334, -1.203291893005371], abs=1e-6
    )
    assert out.aux_loss.item() == pytest.approx(0.4469870328903198, abs=1e-6)


@pytest.mark.parametrize("level", ["node", "graph"])
def test_c2gmoe_output_shapes_and_routing_value(level, two_cliques):
    torch.manual_seed(0)
    graph, _ = two_cliques()
    data = Batch.from_data_list([graph, graph]) if level == "graph" else graph
    T = 2 if level == "graph" else graph.num_nodes
    C, kinds = 3, ["gcn", "gcn2", "gat", "sage", "gin"]
    model = C2GMoE(
        8, C, kinds, hidden=16, router_hidden=8, level=level, heads=4, contrastive_weight=0.5, router_norm=True
    )
    out = model(data.x, data.edge_index, data.edge_index_2hop, data.batch if level == "graph" else None)
    assert out.log_probs.shape == (T, C)
    assert torch.allclose(out.log_probs.exp().sum(-1), torch.ones(T), atol=1e-5)
    assert out.expert_log_probs.shape == (len(kinds), T, C) and out.fusion_weights.shape == (T, len(kinds))
    assert out.expert_outputs.shape == (T, len(kinds), C)
    assert list(out.routings) == ["router"] and out.routing is out.routings["router"]
    assert out.routing.indices.shape == (T, 2) and set(out.aux) == {"balance", "contrastive"}
    # the aux loss is balance_weight * cv² + contrastive_weight * contrastive (defaults 0.01 and 0.5 here)
    expected = 0.01 * out.aux["balance"].item() + 0.5 * out.aux["contrastive"].item()
    assert out.aux_loss.item() == pytest.approx(expected, rel=1e-6)
    out.aux_loss.backward()
    assert model.router.gate.weight.grad is not None


def test_c2gmoe_passes_router_and_router_kwargs(two_cliques):
    graph, _ = two_cliques()
    model = C2GMoE(8, 3, ["gcn", "sage", "gin"], hidden=8, router_hidden=8, router="dtop_p", router_kwargs={"max_k": 2})
    assert type(model.router).__name__ == "DTopPRouter" and model.router.max_k == 2
    with pytest.raises(ConfigError, match="router_kwargs"):
        C2GMoE(8, 3, ["gcn", "sage"], router="topk", router_kwargs={"bogus": 1})


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"confidence": "softmax"}, r"confidence='softmax' is not valid; choose from entropy, margin, none"),
        ({"level": "edge"}, r"level='edge' is not valid; choose from node, graph"),
        ({"pool": "max"}, r"pool='max' is not valid; choose from mean, sum"),
        ({"expert_kinds": ["gcn", "transformer"]}, r"unknown expert kind 'transformer' \(expert_kinds\); choose from"),
        ({"expert_kinds": []}, r"expert_kinds is empty"),
        ({"temperature": 0.0}, r"temperature=0.0"),
        ({"num_clusters": -1}, r"num_clusters=-1"),
        ({"router": "nope"}, r"unknown router 'nope'; valid: "),
        ({"level": "graph", "router": "expert_choice"}, r"cannot route C²GMoE's per-graph gate.*routers that apply"),
    ],
)
def test_c2gmoe_bad_config_raises_config_error(kwargs, match):
    args = {"expert_kinds": ["gcn", "sage"], **kwargs}
    with pytest.raises(ConfigError, match=match):
        C2GMoE(8, 3, **args)
