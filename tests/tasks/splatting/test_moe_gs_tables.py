"""MoE-GS's page tables come from the records alone: the pruning curve, the distillation, the example figures."""

from zoo_testing import make_record

from zoo.leaderboard.draw import draw_tables
from zoo_tasks.splatting.spec import MOE_GS


def test_pruning_curve_and_distillation_tables_from_the_records(tmp_path):
    curve = {"0.5": 29.0, "0.1": 28.5, "0.02": 24.0}
    distilled = {"test/psnr": 28.7, "test/psnr_before": 28.3, "test/psnr_teacher": 29.0}
    records = [
        make_record("moe_gs", "moe_gs", "s", {"test/psnr": 29.0}, extra={"pruning_psnr_by_kept_fraction": curve}),
        make_record("moe_gs", "distilled", "s", distilled, extra={"student": "trajectory"}),
        make_record("moe_gs", "mlp", "s", {"test/psnr": 28.9}),
    ]  # fmt: skip
    plots = tmp_path / "results" / "moe_gs" / "plots"
    plots.mkdir(parents=True)
    (plots / "test_000_weights.png").write_bytes(b"")
    text = draw_tables(MOE_GS, records, leaderboard=tmp_path)
    assert "| kept | 100 % | 50 % | 10 % | 2 % |" in text
    assert "| test/psnr (dB) | 29.00 | 29.00 | 28.50 | 24.00 |" in text
    assert "| trajectory | 28.30 | 28.70 | 29.00 |" in text
    assert "![test_000_weights](results/moe_gs/plots/test_000_weights.png)" in text
    rest = draw_tables(MOE_GS, records[2:], leaderboard=tmp_path / "none")
    assert "kept" not in rest and "Distillation" not in rest  # no MoE-GS or distilled rows: only the speed claim
    assert rest.startswith("## Rasteriser speed") and "| no benchmark record |" in rest
