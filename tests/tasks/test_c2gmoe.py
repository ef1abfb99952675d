"""C2GMoE task: the contrastive routing loss, confidence-aware fusion, model shapes, data folds, a Cora smoke fit."""

from __future__ import annotations

import math
import os
from pathlib import Path

import pytest
import torch

pytest.importorskip("torch_geometric")

from torch_geometric.data import Batch, Data  # noqa: E402

from zoo.moe import make_router  # noqa: E402
from zoo_tasks.graphs.baselines import DenseGNN, GMoE  # noqa: E402
from zoo_tasks.graphs.c2gmoe import (  # noqa: E402
    C2GMoE,
    confidence_fusion,
    expert_confidence,
    group_contrastive_routing_loss,
    kmeans,
)
from zoo_tasks.graphs.diagnostics import DiagnosticsAccumulator, expert_similarity, homogeneity  # noqa: E402
from zoo_tasks.graphs.experts import AddTwoHopEdges, two_hop_edge_index  # noqa: E402

needs_mirror = pytest.mark.skipif(not os.environ.get("ZOO_DATA_MIRROR"), reason="needs ZOO_DATA_MIRROR")


def two_cliques(n: int = 6, dim: int = 8, seed: int = 0) -> tuple[Data, torch.Tensor]:
    """Two n-cliques joined by one edge; features = cluster offset + noise. Returns the graph and true clusters."""
    g = torch.Generator().manual_seed(seed)
    edges = [(i, j) for c in range(2) for i in range(c * n, (c + 1) * n) for j in range(c * n, (c + 1) * n) if i != j]
    edges += [(n - 1, n), (n, n - 1)]
    offset = torch.zeros(2, dim)
    offset[0, 0], offset[1, 1] = 3.0, 3.0
    truth = torch.arange(2 * n) // n
    x = offset[truth] + 0.3 * torch.randn(2 * n, dim, generator=g)
    return AddTwoHopEdges()(Data(x=x, edge_index=torch.tensor(edges).t())), truth


def within_between(probs: torch.Tensor, clusters: torch.Tensor) -> tuple[float, float]:
    d = torch.cdist(probs, probs)
    same = clusters[:, None] == clusters[None, :]
    off = ~torch.eye(len(clusters), dtype=torch.bool)
    return float(d[same & off].mean()), float(d[~same].mean())


def test_contrastive_routing_pulls_clusters_together_and_apart():
    torch.manual_seed(0)
    graph, truth = two_cliques()
    clusters, _ = kmeans(graph.x, 2, generator=torch.Generator().manual_seed(0))
    # k-means recovers the two semantic groups (up to label permutation)
    assert (clusters == truth).all() or (clusters == 1 - truth).all()
    router = make_router("topk", graph.x.shape[1], 4, top_k=2)
    torch.nn.init.normal_(router.gate.weight, std=1.0)  # start from a routing that ignores the clusters
    opt = torch.optim.Adam(router.parameters(), lr=0.05)
    probs0 = router(graph.x).router_probs().detach()
    within0, between0 = within_between(probs0, clusters)
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


def test_contrastive_loss_is_zero_for_one_cluster_and_rejects_bad_input():
    probs = torch.softmax(torch.randn(5, 3, requires_grad=True), -1)
    loss = group_contrastive_routing_loss(probs, torch.zeros(5, dtype=torch.long))
    assert loss.item() == 0.0 and loss.requires_grad
    with pytest.raises(ValueError, match="clusters"):
        group_contrastive_routing_loss(probs, torch.zeros(4, dtype=torch.long))
    with pytest.raises(ValueError, match="temperature"):
        group_contrastive_routing_loss(probs, torch.arange(5), temperature=0.0)


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
    with pytest.raises(ValueError, match="confidence kind"):
        expert_confidence(log_probs, "variance")


def test_fusion_weights_follow_confidence():
    T, C = 3, 4
    confident = torch.log_softmax(torch.tensor([[4.0, 0.0, 0.0, 0.0]]).expand(T, C), -1)
    unsure = torch.log_softmax(torch.tensor([[0.3, 0.2, 0.1, 0.0]]).expand(T, C), -1)
    expert_log_probs = torch.stack([unsure, confident])  # (E=2, T, C)
    router = torch.full((T, 2), 0.5)
    conf = expert_confidence(expert_log_probs)
    log_probs, w = confidence_fusion(expert_log_probs, router, conf)
    assert (w[:, 1] > w[:, 0]).all()  # the confident expert gets more weight at equal router weight
    assert torch.allclose(w.sum(-1), torch.ones(T))
    expected = (w[:, :, None] * expert_log_probs.exp().permute(1, 0, 2)).sum(1).log()
    assert torch.allclose(log_probs, expected, atol=1e-6)
    # router-only fusion (the ablation) keeps the router's weights
    _, w_router = confidence_fusion(expert_log_probs, router, None)
    assert torch.allclose(w_router, router)
    # an unselected expert (router weight 0) stays at 0 however confident it is
    _, w_sel = confidence_fusion(expert_log_probs, torch.tensor([[1.0, 0.0]]).expand(T, 2), conf)
    assert (w_sel[:, 1] == 0).all()


def test_two_hop_edges_of_a_path():
    path = torch.tensor([[0, 1, 1, 2, 2, 3], [1, 0, 2, 1, 3, 2]])
    two = two_hop_edge_index(path, 4)
    assert sorted(map(tuple, two.t().tolist())) == [(0, 2), (1, 3), (2, 0), (3, 1)]


@pytest.mark.parametrize("level", ["node", "graph"])
def test_model_output_shapes(level):
    torch.manual_seed(0)
    graph, _ = two_cliques()
    data = Batch.from_data_list([graph, graph]) if level == "graph" else graph
    T = 2 if level == "graph" else graph.num_nodes
    C, kinds = 3, ["gcn", "gcn2", "gat", "sage", "gin"]
    args = (data.x, data.edge_index, data.edge_index_2hop, data.batch if level == "graph" else None)
    model = C2GMoE(
        8, C, kinds, hidden=16, router_hidden=8, level=level, heads=4, contrastive_weight=0.5, router_norm=True
    )
    out = model(*args)
    assert out.log_probs.shape == (T, C)
    assert torch.allclose(out.log_probs.exp().sum(-1), torch.ones(T), atol=1e-5)
    assert out.expert_log_probs.shape == (len(kinds), T, C) and out.fusion_weights.shape == (T, len(kinds))
    assert out.routing.indices.shape == (T, 2) and set(out.aux) == {"balance", "contrastive"}
    out.aux_loss.backward()
    assert model.router.gate.weight.grad is not None

    gmoe = GMoE(8, C, hidden=16, num_experts=4, num_hop1=2, top_k=2, level=level)
    out = gmoe(*args)
    assert out.log_probs.shape == (T, C) and out.expert_outputs.shape[:2] == (
        4,
        graph.num_nodes * (T if level == "graph" else 1),
    )
    assert out.aux_loss.item() >= 0 and "balance" in out.aux
    for kind in ("gcn", "gat"):
        assert DenseGNN(kind, 8, C, hidden=16, heads=4, level=level)(*args).log_probs.shape == (T, C)


def test_bad_configuration_errors():
    with pytest.raises(ValueError, match="unknown expert kind"):
        C2GMoE(8, 3, ["gcn", "transformer"])
    with pytest.raises(ValueError, match="confidence"):
        C2GMoE(8, 3, ["gcn"], confidence="softmax")
    with pytest.raises(ValueError, match="edge_index_2hop"):
        DenseGNN("gcn", 8, 3).gnn.__class__("gcn2", 8, 4, 3)(torch.randn(3, 8), torch.tensor([[0, 1], [1, 0]]))
    from zoo_tasks.graphs.module import NodeClassifier

    with pytest.raises(ValueError, match="unknown model"):
        NodeClassifier(model="gin_moe")


def test_diagnostics_homogeneity_and_load():
    same = torch.randn(1, 10, 4).expand(3, 10, 4)
    assert homogeneity(expert_similarity(same)) == pytest.approx(1.0, abs=1e-5)
    opposite = torch.stack([same[0], -same[0]])
    assert homogeneity(expert_similarity(opposite)) == pytest.approx(-1.0, abs=1e-5)

    graph, _ = two_cliques()
    model = C2GMoE(8, 2, ["gcn", "gcn2", "sage", "gin"], hidden=8, router_hidden=8).eval()
    out = model(graph.x, graph.edge_index, graph.edge_index_2hop)
    acc = DiagnosticsAccumulator()
    acc.update(out, torch.arange(graph.num_nodes) % 2 == 0)
    summary = acc.compute()
    assert sum(summary["load"]) == pytest.approx(1.0)
    assert 0.0 <= summary["load_entropy"] <= 1.0 and -1.0 <= summary["homogeneity"] <= 1.0
    assert len(summary["similarity"]) == 4 and not math.isnan(summary["routing_entropy"])


@needs_mirror
def test_tu_folds_partition_the_dataset():
    from zoo_tasks.graphs.data import TUDataModule

    dm = TUDataModule("MUTAG", num_folds=5)
    dm.setup()
    tests = []
    for fold in range(5):
        dm.fold = fold
        train, val, test = dm.fold_indices()
        assert not set(train) & set(val) and not set(train) & set(test) and not set(val) & set(test)
        assert len(train) + len(val) + len(test) == len(dm.dataset)
        positive = dm.labels[test].mean()
        assert abs(positive - dm.labels.mean()) < 0.1  # stratified
        tests.append(test)
    every = sorted(i for t in tests for i in t)
    assert every == list(range(len(dm.dataset)))  # test folds partition the dataset without overlap
    batch = next(iter(dm.test_dataloader()))
    assert batch.x.shape[1] == dm.num_features and batch.edge_index_2hop.max() < batch.num_nodes
    with pytest.raises(ValueError, match="fold"):
        TUDataModule("MUTAG", fold=10, num_folds=10)


@needs_mirror
def test_cora_smoke_fit_writes_diagnostics(tmp_path: Path):
    import pytorch_lightning as pl

    from zoo_tasks.graphs.data import PlanetoidDataModule
    from zoo_tasks.graphs.module import NodeClassifier

    pl.seed_everything(0)
    dm = PlanetoidDataModule("Cora")
    model = NodeClassifier(
        model="c2gmoe", hidden=8, router_hidden=8, heads=2, expert_kinds=["gcn", "gcn2", "gat"], contrastive_weight=0.5
    )
    trainer = pl.Trainer(
        max_epochs=3,
        default_root_dir=tmp_path,
        logger=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        enable_checkpointing=False,
    )
    trainer.fit(model, dm)
    result = trainer.test(model, dm, verbose=False)[0]
    assert model.hparams.in_dim == 1433 and model.hparams.num_classes == 7
    assert 0.0 <= result["test/acc"] <= 1.0
    diag = model.extra_results()["diagnostics"]
    assert diag["num_experts"] == 3 and len(diag["load"]) == 3
    for path in diag["plots"].values():
        assert Path(path).is_file() and Path(path).stat().st_size > 0
