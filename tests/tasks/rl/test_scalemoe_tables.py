"""ScaleMoE's leaderboard: the spec's declared targets judge means over seeds against published SimBa and the
dense twin; zoo_tasks.rl.tables judges the speed target on the newest benchmark file per critic width."""

import json

from zoo_testing import make_record

from zoo.leaderboard.results_table import ResultTable
from zoo.leaderboard.targets import targets_section
from zoo_tasks.rl.spec import SCALEMOE

TASK = "cartpole-swingup @50k, critic 128"


def _rec(method, ret, seed):
    return make_record("scalemoe", method, TASK, {"test/return": ret}, seed=seed)


def test_declared_targets_judge_means_over_seeds():
    records = [
        _rec("SimBa (dense twin)", 800.0, 0),  # mean 770: -8% of the published 835, within 10%
        _rec("SimBa (dense twin)", 740.0, 1),
        _rec("ScaleMoE-output", 780.0, 0),
        _rec("ScaleMoE-feature", 700.0, 0),
    ]
    table = ResultTable(SCALEMOE.benchmark, records, SCALEMOE.higher_is_better)
    text = "\n".join(targets_section(SCALEMOE.targets, table))
    assert (
        f"| SimBa (dense twin) test/return within 10% of published | {TASK} | 770.0 (n=2) vs 835.0 (-8%) | ✓ |" in text
    )
    assert f"| ScaleMoE-output ≥ SimBa (dense twin) | {TASK} | 780.0 (n=1) vs 770.0 (n=2) | ✓ |" in text
    assert f"| ScaleMoE-feature ≥ SimBa (dense twin) | {TASK} | 700.0 (n=1) vs 770.0 (n=2) | ✗ |" in text
    assert text.count("| ✓ |") + text.count("| ✗ |") == 3  # cells without runs are not judged


def test_dense_twin_more_than_10_percent_below_published_misses():
    table = ResultTable(SCALEMOE.benchmark, [_rec("SimBa (dense twin)", 750.0, 0)], SCALEMOE.higher_is_better)
    assert "750.0 (n=1) vs 835.0 (-10%) | ✗ |" in "\n".join(targets_section(SCALEMOE.targets, table))


def test_speed_target_reads_the_newest_benchmark_per_width(tmp_path, monkeypatch):
    from zoo_tasks.rl import tables

    bench_dir = tmp_path / "bench"
    bench_dir.mkdir()

    def write(name, date, width, ratio):
        result = {"env_steps_per_s": 10.0 * ratio, "updates_per_s": 1.0, "critic_active": 1, "critic_total": 4}
        bench = {
            "date": date,
            "settings": dict(critic_hidden=width, env="cartpole-swingup", actor_hidden=8, batch_size=8),
            "results": {
                "simba": {**result, "ratio_vs_dense": 1.0},
                "scalemoe-output": {**result, "ratio_vs_dense": ratio},
            },
        }
        bench["settings"].update(num_experts=4, top_k=2, threads=1, repeats=1)
        (bench_dir / name).write_text(json.dumps(bench))

    write("old.json", "2026-01-01T00:00:00Z", 512, 0.9)
    write("new.json", "2026-02-01T00:00:00Z", 512, 0.69)
    monkeypatch.setattr(tables, "results_dir", lambda task: tmp_path)
    verdicts = tables.speed_verdicts(tables._latest_benches())
    assert [(v.target, v.where, v.ours, v.met) for v in verdicts] == [
        ("scalemoe-output env steps/s ≥ 0.7x dense", "critic width 512 (benchmark)", "0.69x", False)
    ]
    page = tables.scalemoe_tables([])
    assert "| scalemoe-output env steps/s ≥ 0.7x dense | critic width 512 (benchmark) | 0.69x | ✗ |" in page
    assert "new.json" in page and "old.json" not in page
