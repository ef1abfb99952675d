"""zoo_tasks.rl.bench (``zoo bench scalemoe``): real fits side by side, ratios against the dense twin, JSON out
(under runs/ by default; into the leaderboard's benchmark folder only when asked)."""

import json
from pathlib import Path

import pytest

from zoo_tasks.rl.bench import main


@pytest.mark.slow(reason="times a training step of every architecture")
def test_bench_measures_each_architecture_and_writes_ratios_under_runs(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    args = ["--env-steps", "230", "--learning-starts", "100", "--actor-hidden", "8", "--critic-hidden", "8"]
    args += ["--batch-size", "8", "--num-experts", "4", "--router", "noisy_topk"]
    assert main([*args, "--architectures", "simba", "scalemoe-feature"]) == 0
    (out,) = (tmp_path / "runs" / "bench" / "scalemoe").glob("*-critic8.json")
    result = json.loads(out.read_text())
    assert result["settings"]["router"] == "noisy_topk" and set(result["results"]) == {"simba", "scalemoe-feature"}
    simba, moe = result["results"]["simba"], result["results"]["scalemoe-feature"]
    assert simba["ratio_vs_dense"] == 1.0
    assert moe["ratio_vs_dense"] == pytest.approx(moe["env_steps_per_s"] / simba["env_steps_per_s"])
    assert moe["updates_per_s"] > 0 and moe["critic_active"] < moe["critic_total"]
    assert f"wrote {out.relative_to(tmp_path)}" in capsys.readouterr().out


def test_compare_loop_adds_the_previous_dispatch_side_by_side(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    args = ["--env-steps", "210", "--learning-starts", "100", "--actor-hidden", "8", "--critic-hidden", "8"]
    args += ["--batch-size", "8", "--num-experts", "4", "--compare-loop"]
    assert main([*args, "--architectures", "simba", "scalemoe-output"]) == 0
    (out,) = (tmp_path / "runs" / "bench" / "scalemoe").glob("*-critic8.json")
    results = json.loads(out.read_text())["results"]
    assert list(results) == ["simba", "scalemoe-output", "loop:scalemoe-output"]
    assert results["loop:scalemoe-output"]["critic_total"] == results["scalemoe-output"]["critic_total"]


def test_only_an_explicit_flag_writes_where_the_page_reads(capsys):
    from zoo.leaderboard.record import results_dir
    from zoo_tasks.rl.bench import output_dir

    assert output_dir(leaderboard=True) == results_dir("scalemoe") / "bench"
    assert output_dir(leaderboard=False) == Path("runs/bench/scalemoe")
    with pytest.raises(SystemExit):
        main(["--leaderboard", "--out", "x.json"])
    assert "not allowed with argument" in capsys.readouterr().err


def test_bench_refuses_a_budget_without_learning_steps(capsys):
    assert main(["--env-steps", "200", "--learning-starts", "100"]) == 2
    assert "--env-steps must leave agent steps after --learning-starts" in capsys.readouterr().err
