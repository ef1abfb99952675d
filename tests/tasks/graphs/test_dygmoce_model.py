"""DyGMoCE models on a tiny temporal graph: each method trains (loss falls), routes through zoo.moe, learns its
curvatures, and its test metrics come out under DyGLib's names; EdgeBank scores remembered pairs."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from zoo_testing import quiet_trainer

from zoo.errors import ConfigError
from zoo_tasks.graphs.dynamic.data import DynamicLinkDataModule
from zoo_tasks.graphs.dynamic.edgebank import edge_memory, edgebank_scores
from zoo_tasks.graphs.dynamic.module import DynamicLinkPredictor
from zoo_tasks.graphs.dynamic.neighbors import NeighborFinder, recent_neighbors
from zoo_tasks.graphs.dynamic.split import Interactions
from zoo_tasks.graphs.dynamic.topology import recent_clustering, summarise

TINY = dict(time_dim=4, channel_dim=4, num_layers=1, heads=2, dropout=0.0, num_experts=3, lr=0.01)


def tiny_data(tmp_path, **kwargs) -> DynamicLinkDataModule:
    """12 nodes; node i messages i + 1 (mod 12) and back, repeatedly: a learnable recurring pattern."""
    rows = [f"{i % 12},{(i + 1) % 12},{t}" for t, i in enumerate(range(300))]
    path = tmp_path / "tiny.csv"
    path.write_text("src,dst,timestamp\n" + "\n".join(rows) + "\n")
    dm = DynamicLinkDataModule(path=str(path), batch_size=30, eval_batch_size=30, max_sequence_length=8,
                               feature_width=4, eval_strategies=["random"], **kwargs)  # fmt: skip
    dm.setup()
    return dm


@pytest.mark.parametrize("method", ["dygformer", "twin", "dygmoce", "graphmixer"])
def test_methods_train_and_return_routing(tmp_path, method):
    torch.manual_seed(0)
    dm = tiny_data(tmp_path, **({"neighbors": "recent", "num_neighbors": 5} if method == "graphmixer" else {}))
    model = DynamicLinkPredictor(method=method, node_dim=4, edge_dim=4, num_neighbors=5, **TINY)
    opt = model.configure_optimizers()
    batches = list(dm.train_dataloader())
    losses = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # self.log without a trainer
        for _ in range(8):
            total = 0.0
            for batch in batches:
                out = model.training_step(batch, 0)
                opt.zero_grad()
                out["loss"].backward()
                opt.step()
                total += float(out["loss"])
            losses.append(total / len(batches))
    assert losses[-1] < losses[0] - 0.05, losses
    assert set(out["routing"]) == (
        {f"{s}.block0.{p}" for s in ("pos", "neg") for p in ("attention", "ffn")} if method == "dygmoce" else set()
    )
    curv = model.extra_results().get("curvatures", {})
    if method == "dygmoce":
        assert curv["block0.attention"] != [-1.0, 0.0, 1.0]  # learned away from the initial spread
        assert len(curv["block0.ffn"]) == 3
    elif method == "twin":
        assert curv["block0.attention"] == [0.0]  # the twin's single expert stays Euclidean


def test_metric_names_follow_strategies_and_sets(tmp_path):
    dm = tiny_data(tmp_path)
    assert dm.test_names() == ["", "ind_"]
    dm2 = DynamicLinkDataModule(path=dm.path, eval_strategies=["random", "historical", "inductive"])
    assert dm2.test_names() == ["", "ind_", "hist_", "hist_ind_", "indns_", "indns_ind_"]
    with pytest.raises(ConfigError, match="eval_strategies"):
        DynamicLinkDataModule(path=dm.path, eval_strategies=["hard"])
    with pytest.raises(ConfigError, match="method='gat'; valid: dygformer, twin, dygmoce"):
        DynamicLinkPredictor(method="gat", node_dim=4, edge_dim=4)


def test_graphmixer_refuses_dygformer_batches(tmp_path):
    batch = next(iter(tiny_data(tmp_path).train_dataloader()))
    model = DynamicLinkPredictor(method="graphmixer", node_dim=4, edge_dim=4, num_neighbors=5, **TINY)
    with pytest.raises(ConfigError, match="neighbors: recent"):
        model.scores(batch)


def test_recent_neighbours_sit_at_the_back():
    data = Interactions(np.array([1, 3, 1]), np.array([2, 1, 2]), np.array([1.0, 2.0, 3.0]), np.arange(1, 4))
    seq = recent_neighbors(NeighborFinder(data, 3), np.array([1, 3]), np.array([3.5, 2.0]), k=4)
    assert seq.ids.tolist() == [[0, 2, 3, 2], [0, 0, 0, 0]] and seq.edge_ids.tolist()[0] == [0, 1, 2, 3]


def test_train_stride_keeps_every_kth_batch_in_time_order(tmp_path):
    full = tiny_data(tmp_path)
    strided = tiny_data(tmp_path, train_stride=2)
    a = [b["ids"]["edge_ids"] for b in full.train_dataloader()]
    b = [b["ids"]["edge_ids"] for b in strided.train_dataloader()]
    assert len(b) == (len(a) + 1) // 2 and all(torch.equal(x, y) for x, y in zip(a[::2], b))


def test_edgebank_remembers_history_and_earlier_test_batches():
    hist = Interactions(np.array([1, 2]), np.array([2, 3]), np.array([0.0, 1.0]), np.array([1, 2]))
    test = Interactions(np.array([3, 1, 3]), np.array([4, 2, 4]), np.array([2.0, 3.0, 4.0]), np.array([3, 4, 5]))
    pos, neg = edgebank_scores(hist, test, test, np.array([2, 4, 2]), np.array([1, 1, 3]), batch_size=2)
    # batch 1 (edges 3, 4): memory {(1,2), (2,3)}; batch 2 (edge 5): plus (3,4), (1,2)
    assert pos.tolist() == [0.0, 1.0, 1.0] and neg.tolist() == [0.0, 0.0, 1.0]
    assert edge_memory(hist.src, hist.dst, hist.ts, "time_window", window=0.5) == {(2, 3)}


def test_topology_diagnostic_counts_closed_triangles():
    # node 1's neighbours 2, 3, 4; only 2-3 interacted before t = 10: one closed pair of three
    data = Interactions(np.array([1, 1, 1, 2]), np.array([2, 3, 4, 3]), np.array([1.0, 2.0, 3.0, 4.0]),
                        np.arange(1, 5))  # fmt: skip
    finder = NeighborFinder(data, 4)
    assert recent_clustering(finder, 1, 10.0, np.array([1, 2, 3, 4, 0])) == pytest.approx(1 / 3)
    assert recent_clustering(finder, 1, 3.5, np.array([1, 2, 3, 4, 0])) == 0.0  # 2-3 happens at t = 4
    out = summarise([0.0, 0.1, 0.5, 0.9, 1.0], [-0.5, -0.2, 0.0, 0.3, 0.6])
    assert out["spearman"] == 1.0 and out["n"] == 5


def test_fit_and_test_log_dyglib_metrics_and_diagnostics(tmp_path):
    torch.manual_seed(0)
    dm = tiny_data(tmp_path)
    model = DynamicLinkPredictor(method="dygmoce", node_dim=4, edge_dim=4, **TINY)
    trainer = quiet_trainer(max_epochs=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer.fit(model, datamodule=dm)
        assert "val/ap" in trainer.callback_metrics and "val/ind_ap" in trainer.callback_metrics
        trainer.test(model, datamodule=dm, verbose=False)
    metrics = trainer.callback_metrics
    assert {"test/ap", "test/auc", "test/ind_ap", "test/ind_auc"} <= set(metrics)
    assert 0.0 <= float(metrics["test/ap"]) <= 1.0
    extra = model.extra_results()
    assert set(extra["curvatures"]) == {"block0.attention", "block0.ffn"}
    assert 0.0 <= extra["unimodal_fraction"]["block0.attention"] <= 1.0
    profile = extra["routing_by_curvature_rank"]["block0.ffn"]  # mean weight per curvature rank: a distribution
    assert len(profile) == len(extra["curvatures"]["block0.ffn"]) and sum(profile) == pytest.approx(1.0, abs=1e-4)
    assert extra["routing_vs_clustering"]["block0.ffn"]["n"] == len(dm.split.test)
    assert extra["data"]["split"]["test"] == len(dm.split.test)
