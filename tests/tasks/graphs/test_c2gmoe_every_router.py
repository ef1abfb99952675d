"""Every router in zoo.moe.ROUTERS through GMoE and C²GMoE (node and graph level) for one training step on a tiny
graph (zoo.moe.testing.check_router_step); a router that cannot route a mixture raises ConfigError."""

from __future__ import annotations

import warnings

import pytest
import torch
from torch_geometric.data import Batch

from zoo.errors import ConfigError
from zoo.moe import ROUTERS, require_router
from zoo.moe.testing import check_router_step
from zoo_tasks.graphs.baselines import GRAPH_LEVEL_NEEDS
from zoo_tasks.graphs.module import GraphClassifier, NodeClassifier

MODELS = ("gmoe", "c2gmoe")


def applies(router: str, level: str) -> bool:
    """Node level routes the whole graph at once (any router); graph level gates items of a mini-batch."""
    if level == "node":
        return True
    try:
        require_router(router, "graph level", needs=GRAPH_LEVEL_NEEDS)
    except ConfigError:
        return False
    return True


@pytest.mark.parametrize("level", ["node", "graph"])
@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("router", sorted(ROUTERS))
def test_every_router_trains_one_step(router, model, level, two_cliques):
    torch.manual_seed(0)
    graph, truth = two_cliques()
    cls = NodeClassifier if level == "node" else GraphClassifier
    kwargs = dict(model=model, in_dim=8, num_classes=2, hidden=8, router_hidden=8, heads=2, router=router, top_k=2)
    if not applies(router, level):
        with pytest.raises(ConfigError, match=rf"router {router!r} cannot route .*routers that apply"):
            cls(**kwargs)
        return
    module = cls(**kwargs)
    if level == "node":
        graph.y, graph.train_mask = truth, torch.ones(graph.num_nodes, dtype=torch.bool)
        batch = graph
    else:
        graphs = [graph.clone() for _ in range(4)]
        for i, g in enumerate(graphs):
            g.y = torch.tensor([i % 2])
        batch = Batch.from_data_list(graphs)
    module.train()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # self.log without a trainer
        out = module.training_step(batch, 0)
    check_router_step(module, out["loss"], out["routing"])
