"""zoo_tasks.rl.tables: the targets table judges means over seeds against published SimBa and the benchmark."""


def test_targets_table_judges_means_over_seeds():
    from zoo.leaderboard.record import RunRecord
    from zoo_tasks.rl.tables import _target_lines

    def rec(method, dataset, ret, seed):
        return RunRecord(
            task="scalemoe",
            method=method,
            dataset=dataset,
            metrics={"test/return": ret},
            seed=seed,
            config={},
            versions={},
            wall_time_s=1.0,
            commit="",
            machine={},
        )

    task = "cartpole-swingup @50k, critic 128"
    records = [
        rec("SimBa (dense twin)", task, 800.0, 0),  # mean 770: -8% of the published 835, within 10%
        rec("SimBa (dense twin)", task, 740.0, 1),
        rec("ScaleMoE-output", task, 780.0, 0),
        rec("ScaleMoE-feature", task, 700.0, 0),
    ]
    bench = {
        512: ("b.json", {"results": {"simba": {"ratio_vs_dense": 1.0}, "scalemoe-output": {"ratio_vs_dense": 0.69}}})
    }
    text = "\n".join(_target_lines(records, bench))
    assert f"| dense twin within 10% of published SimBa | {task} | 770.0 (n=2) vs 835 (-8%) | ✓ |" in text
    assert f"| ScaleMoE-output >= dense twin | {task} | 780.0 (n=1) vs 770.0 (n=2) | ✓ |" in text
    assert f"| ScaleMoE-feature >= dense twin | {task} | 700.0 (n=1) vs 770.0 (n=2) | ✗ |" in text
    assert "| scalemoe-output env steps/s >= 0.7x dense | critic width 512 (benchmark) | 0.69x | ✗ |" in text
    assert "simba env steps/s" not in text
