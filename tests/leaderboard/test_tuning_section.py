"""A task page says how each tuned row was tuned (issue 26): trials, best validation value, chosen values, space."""

from zoo_testing import make_record

from zoo.leaderboard.render import render_task
from zoo.registry import BenchmarkRow, TaskSpec

TUNING = {
    "params": {"model.init_args.lr": 0.00234, "model.init_args.hidden": 32},
    "value": 0.81,
    "metric": "val/acc",
    "trials": 12,
    "pruned": 3,
    "space": "lr 0.001–0.05 (log), hidden {16, 32}",
}


def test_tuned_rows_show_their_search():
    spec = TaskSpec(
        name="t",
        description="",
        model="m:M",
        datamodules={},
        config_dir="/tmp",
        metrics=("test/acc",),
        higher_is_better=("test/acc",),
        benchmark=(
            BenchmarkRow(method="gcn_tuned", dataset="Cora", config="c.yaml", tune_trials=12),
            BenchmarkRow(method="gat_tuned", dataset="Cora", config="c.yaml", tune_trials=12),
            BenchmarkRow(method="gcn", dataset="Cora", config="c.yaml"),
        ),
    )
    records = [make_record("t", "gcn_tuned", "Cora", {"test/acc": 0.8}, extra={"tuning": TUNING})]
    page = render_task(spec, records)
    assert "## Tuning" in page and "12 finished trials each" in page
    assert "| gcn_tuned / Cora | 12 (3) | val/acc 0.810 | lr=0.00234, hidden=32 | lr 0.001–0.05 (log)" in page
    assert "| gat_tuned / Cora | not run |" in page
    untuned = TaskSpec(
        name="u",
        description="",
        model="m:M",
        datamodules={},
        config_dir="/tmp",
        benchmark=(BenchmarkRow(method="gcn", dataset="Cora", config="c.yaml"),),
    )
    assert "## Tuning" not in render_task(untuned, [])
