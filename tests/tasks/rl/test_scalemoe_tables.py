"""ScaleMoE's leaderboard: the spec's declared targets judge means over seeds against published SimBa and the
dense twin; zoo_tasks.rl.tables judges the speed target on the newest benchmark file per critic width."""

import json

from zoo_testing import make_record

from zoo.leaderboard.draw import draw_tables
from zoo.leaderboard.results_table import ResultTable
from zoo.leaderboard.targets import targets_section
from zoo_tasks.rl.spec import SCALEMOE

TASK = "cartpole-swingup @50k, critic 128"


def _rec(method, ret, seed):
    return make_record("scalemoe", method, TASK, {"test/return": ret}, seed=seed)


def _runs(method, returns):
    return [_rec(method, ret, seed) for seed, ret in enumerate(returns)]


def test_declared_targets_judge_seeds_paired_against_published_and_the_dense_twin():
    records = _runs("SimBa (dense twin)", [775.0, 770.0, 765.0])  # -7.2 to -8.4 % of the published 835
    records += _runs("ScaleMoE-output", [790.0, 780.0, 770.0])  # +10 ± 12: a tie, not shown
    records += _runs("ScaleMoE-feature", [700.0, 690.0, 710.0])  # -70: worse
    table = ResultTable(SCALEMOE.benchmark, records, SCALEMOE.higher_is_better)
    text = "\n".join(targets_section(SCALEMOE.targets, table))
    assert (
        f"| SimBa (dense twin) test/return within 10% of published | {TASK} | 770.0 (n=3) vs 835.0 (-8%) | 3 | "
        "+2.2 % [+0.7 %, +3.7 %] | better ✓ | met |" in text
    )
    assert f"| ScaleMoE-output ≥ SimBa (dense twin) | {TASK} | 780.0 (n=3) vs 770.0 (n=3) | 3 | " in text
    assert "| +10.00 [-2.42, +22.42] | tie = | not shown (tie) |" in text
    assert "| -70.0 [-102.9, -37.1] | worse ✗ | not met |" in text
    judged = text.count("| met |") + text.count("| not met |") + text.count("| not shown (tie) |")
    assert judged == 3  # cells without runs are not judged


def test_dense_twin_more_than_10_percent_below_published_misses():
    table = ResultTable(
        SCALEMOE.benchmark, _runs("SimBa (dense twin)", [740.0, 742.0, 738.0]), SCALEMOE.higher_is_better
    )
    assert "740.0 (n=3) vs 835.0 (-11%) | 3 | -1.4 % [-2.0 %, -0.8 %] | worse ✗ | not met |" in "\n".join(
        targets_section(SCALEMOE.targets, table)
    )
    one_seed = ResultTable(SCALEMOE.benchmark, [_rec("SimBa (dense twin)", 700.0, 0)], SCALEMOE.higher_is_better)
    assert "| n too small | not yet judged |" in "\n".join(targets_section(SCALEMOE.targets, one_seed))


def test_speed_target_reads_the_newest_benchmark_per_width(tmp_path):
    from zoo.bench.provenance import BenchRun
    from zoo_tasks.rl import tables

    bench_dir = tmp_path / "results" / "scalemoe" / "bench"
    bench_dir.mkdir(parents=True)

    def write(name, date, width, ratios, provenance=True):
        def result(ratio):
            return {"env_steps_per_s": 10.0 * ratio, "updates_per_s": 1.0, "critic_active": 1, "critic_total": 4}

        numbers = {
            "settings": dict(critic_hidden=width, env="cartpole-swingup", actor_hidden=8, batch_size=8),
            "results": {
                "simba": {**result(1.0), "ratio_vs_dense": 1.0},
                "scalemoe-output": {**result(ratios[0]), "ratio_vs_dense": sorted(ratios)[1]},
            },
            "runs": {"simba": [result(1.0)] * 3, "scalemoe-output": [result(r) for r in ratios]},
        }
        numbers["settings"].update(num_experts=4, top_k=2, threads=1, repeats=3)
        bench = (
            BenchRun("scalemoe", ["zoo_tasks.rl.bench"], ["--leaderboard"]).record(numbers) if provenance else numbers
        )
        (bench_dir / name).write_text(json.dumps({**bench, "date": date}))

    write("old.json", "2026-01-01T00:00:00Z", 512, [0.9, 0.9, 0.9])
    write("new.json", "2026-02-01T00:00:00Z", 512, [0.62, 0.60, 0.61])
    write("typed.json", "2026-01-01T00:00:00Z", 128, [0.9, 0.9, 0.9], provenance=False)
    verdicts = tables.speed_verdicts(tables._latest_benches(bench_dir))
    assert [(v.target, v.where, v.ours, v.met) for v in verdicts] == [
        ("scalemoe-output env steps/s ≥ 0.7x dense", "critic width 128 (benchmark)", "0.90x", None),
        ("scalemoe-output env steps/s ≥ 0.7x dense", "critic width 512 (benchmark)", "0.61x", False),
    ]
    assert verdicts[0].outcome.startswith("no benchmark record") and verdicts[1].comparison.n == 3
    page = draw_tables(SCALEMOE, [], leaderboard=tmp_path)
    assert "| critic width 512 (benchmark) | 0.61x | 3 |" in page and "| worse ✗ | not met |" in page
    assert "| critic width 128 (benchmark) | 0.90x | — | — | no benchmark record" in page
    assert "new.json" in page and "old.json" not in page
