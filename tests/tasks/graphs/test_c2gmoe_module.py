"""zoo_tasks.graphs.module: steps return {"loss", "routing"} values (evaluation routings restricted to the stage's
nodes), config errors, and a short Cora fit writing the routing summary and the diagnostics."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest
import torch
from zoo_testing import quiet_trainer

from zoo.errors import ConfigError
from zoo.moe import Routing
from zoo_tasks.graphs.module import NodeClassifier


def with_masks(graph):
    n = graph.num_nodes
    graph.y = torch.arange(n) % 2
    graph.train_mask = torch.arange(n) < 4
    graph.val_mask = (torch.arange(n) >= 4) & (torch.arange(n) < 8)
    graph.test_mask = torch.arange(n) >= 8
    return graph


@pytest.mark.parametrize("model", ["gmoe", "c2gmoe"])
def test_steps_return_the_loss_and_routing_values(model, two_cliques):
    torch.manual_seed(0)
    graph = with_masks(two_cliques()[0])
    module = NodeClassifier(model=model, in_dim=8, num_classes=2, hidden=8, router_hidden=8, heads=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # self.log without a trainer
        train = module.training_step(graph, 0)
        val = module.validation_step(graph, 0)
        module.on_test_epoch_start()
        test = module.test_step(graph, 0)
    names = ["layers.0", "layers.1"] if model == "gmoe" else ["router"]
    assert set(train) == {"loss", "routing"} and train["loss"].requires_grad and list(train["routing"]) == names
    assert all(isinstance(r, Routing) and r.valid is None for r in train["routing"].values())
    assert all(torch.equal(r.valid, graph.val_mask) for r in val["routing"].values())
    assert all(torch.equal(r.valid, graph.test_mask) for r in test["routing"].values())
    assert module.diag.compute()["num_experts"] == 4


def test_module_config_errors():
    with pytest.raises(ConfigError, match=r"model='gin_moe' is not valid; choose from gcn, gat, gin, gmoe, c2gmoe"):
        NodeClassifier(model="gin_moe")
    with pytest.raises(ConfigError, match=r"confidence='softmax'"):
        NodeClassifier(model="c2gmoe", in_dim=8, num_classes=2, confidence="softmax")
    with pytest.raises(ConfigError, match=r"in_dim/num_classes are unset"):
        NodeClassifier(model="gcn").setup("fit")


def test_cora_smoke_fit_writes_routing_summary_and_diagnostics(tmp_path: Path, data_mirror):
    import pytorch_lightning as pl

    from zoo.callbacks.routing_stats import SUMMARY_FILE, RoutingStatsCallback
    from zoo_tasks.graphs.data import PlanetoidDataModule

    pl.seed_everything(0)
    dm = PlanetoidDataModule("Cora")
    model = NodeClassifier(
        model="c2gmoe", hidden=8, router_hidden=8, heads=2, expert_kinds=["gcn", "gcn2", "gat"], contrastive_weight=0.5
    )
    trainer = quiet_trainer(max_epochs=2, default_root_dir=tmp_path, callbacks=[RoutingStatsCallback(heatmaps=False)])
    trainer.fit(model, dm)
    result = trainer.test(model, dm, verbose=False)[0]
    assert model.hparams.in_dim == 1433 and model.hparams.num_classes == 7
    assert 0.0 <= result["test/acc"] <= 1.0
    summary = json.loads((tmp_path / SUMMARY_FILE).read_text())
    assert summary["train"]["router"]["tokens"] == 2 * 2708  # training routes every node
    assert summary["validate"]["router"]["tokens"] == 2 * 500 and summary["test"]["router"]["tokens"] == 1000
    diag = model.extra_results()["diagnostics"]
    assert diag["num_experts"] == 3 and diag["load"] == summary["test"]["router"]["load"]
    for path in diag["plots"].values():
        assert Path(path).is_file() and Path(path).stat().st_size > 0
