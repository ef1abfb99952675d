from pathlib import Path
from types import SimpleNamespace

import torch

from zoo.leaderboard.draw import draw_tables
from zoo_tasks.worldmodel.plots import gate_heatmap, rollout_figure
from zoo_tasks.worldmodel.spec import WESTWORLD


def test_figures_are_written(tmp_path):
    true, pred = torch.randn(10, 5), torch.randn(6, 5)
    valid = torch.tensor([True, False, True, True, True])
    path = rollout_figure(true, pred, valid, 4, "robot", tmp_path / "r" / "robot.png")
    assert (tmp_path / "r" / "robot.png").stat().st_size > 1000 and path.endswith("robot.png")
    gates = {"a": {"block0": [0.5, 0.5], "block1": [0.9, 0.1]}, "b": {"block0": [0.2, 0.8], "block1": [0.3, 0.7]}}
    gate_heatmap(gates, tmp_path / "g.png")
    assert (tmp_path / "g.png").stat().st_size > 1000


def test_tables_pool_scaling_and_gates():
    def rec(method, dataset, mae, gate=None):
        extra = {"system_gate": {"gym_hopper": {"block0": [0.0, 1.0], "block1": gate}}} if gate else {}
        return SimpleNamespace(method=method, dataset=dataset, metrics={"test/mae": mae}, extra=extra)

    records = [
        rec("westworld", "scaling: 3 robots", 0.9),
        rec("westworld", "zero-shot (Walker2d, Hopper)", 0.5, [0.25, 0.75]),
        rec("westworld", "zero-shot (Walker2d, Hopper)", 0.7, [0.75, 0.25]),
        rec("dense", "scaling: 6 robots", 0.8),
        rec("trajworld", "zero-shot (Walker2d, Hopper)", 0.1),
    ]
    md = draw_tables(WESTWORLD, records, leaderboard=Path("/nonexistent-leaderboard-folder"))
    assert "| westworld | 0.900 | — | 0.600 |" in md
    assert "| dense | — | 0.800 | — |" in md
    assert "| gym_hopper | 0.50 | 0.50 |" in md  # the last block, averaged over the two seeds


def test_page_figures_are_drawn_from_the_records(tmp_path):
    def rec(method, dataset, mae, gate=None):
        extra = {"system_gate": {"gym_hopper": {"block1": gate}}} if gate else {}
        return SimpleNamespace(method=method, dataset=dataset, metrics={"test/mae": mae}, extra=extra)

    records = [
        rec("westworld", "scaling: 3 robots", 0.9),
        rec("dense", "scaling: 3 robots", 0.8),
        rec("westworld", "zero-shot (Walker2d, Hopper)", 0.5, [0.25, 0.75]),
        rec("westworld", "zero-shot (Walker2d, Hopper)", 0.7, [0.75, 0.25]),
    ]
    results = tmp_path / "results" / "westworld"
    (results / "plots").mkdir(parents=True)
    (results / "plots" / "gym_hopper.png").write_bytes(b"png")
    md = draw_tables(WESTWORLD, records, leaderboard=tmp_path)
    assert (results / "figures" / "scaling.png").stat().st_size > 1000
    assert (results / "figures" / "system_gate.png").stat().st_size > 1000
    assert "![scaling](results/westworld/figures/scaling.png)" in md
    assert "![gym_hopper](results/westworld/plots/gym_hopper.png)" in md
    assert not (tmp_path / "figures").exists()
