"""DyGMoCE's diagnostics section: means over runs of the records' extra, and its two figures."""

from __future__ import annotations

from zoo.leaderboard.draw import draw_tables
from zoo.leaderboard.record import RunRecord
from zoo_tasks.graphs.dynamic.spec import DYGMOCE


def _rec(seed: int, kappa: list[float], profile: list[float], rho: float) -> RunRecord:
    extra = {
        "curvatures": {"block0.ffn": kappa},
        "unimodal_fraction": {"block0.ffn": 0.5 + 0.1 * seed},
        "routing_by_curvature_rank": {"block0.ffn": profile},
        "routing_vs_clustering": {"block0.ffn": {"n": 10, "spearman": rho,
                                                 "expected_curvature_by_clustering_quartile": [-0.2, 0.0, 0.1, 0.3],
                                                 "clustering_quartile_edges": [0.1, 0.2, 0.3]}},
    }  # fmt: skip
    return RunRecord(task="dygmoce", method="dygmoce", dataset="UCI", metrics={"test/ap": 0.7}, seed=seed,
                     config={}, versions={}, wall_time_s=1.0, commit="c", machine={}, extra=extra)  # fmt: skip


def test_diagnostics_average_runs_and_draw_figures(tmp_path):
    records = [_rec(0, [-1.0, 0.0, 1.0], [0.2, 0.5, 0.3], 0.4), _rec(1, [-0.5, 0.0, 0.5], [0.4, 0.5, 0.1], 0.2)]
    results = tmp_path / "results" / "dygmoce"
    results.mkdir(parents=True)  # figures are drawn only into a checkout holding the task's records
    text = draw_tables(DYGMOCE, records, leaderboard=tmp_path)
    row = "| block0.ffn | [-0.75, 0.00, 0.75] | 0.550 | [0.300, 0.500, 0.200] | 0.300 | [-0.20, 0.00, 0.10, 0.30] |"
    assert row in text
    assert (results / "figures" / "routing_by_curvature_rank.png").stat().st_size > 0
    assert (results / "figures" / "curvature_vs_clustering.png").stat().st_size > 0
    assert "![routing by curvature rank](results/dygmoce/figures/routing_by_curvature_rank.png)" in text


def test_no_dygmoce_runs_no_section(tmp_path):
    text = draw_tables(DYGMOCE, [], leaderboard=tmp_path)
    assert "Curvature experts" not in text and "| no benchmark record |" in text  # the speed claim stays
