"""`zoo bench NAME` finds zoo's own benchmarks and those every task declares; the core names no task; a quick
smoke run of `zoo bench moe` writes under runs/, never into leaderboard/results/ (issue 16 item 1, 17 item 6)."""

from pathlib import Path

from zoo.cli import main as cli
from zoo.registry import discover


def test_benchmarks_come_from_the_core_and_the_task_specs():
    assert cli.CORE_BENCHES == {
        "moe": "zoo.bench.moe:main",
        "ep": "zoo.bench.expert_parallel:main",
        "tasks": "zoo.bench.tasks:main",
    }
    found = cli.benches()
    assert found["moe"] == "zoo.bench.moe:main"
    for load in discover():
        for name, target in (getattr(load.spec, "benchmarks", None) or {}).items():
            assert found[name] == target


def test_a_quick_moe_bench_writes_under_runs():
    args = cli._bench_args("moe", ["--quick"])
    out = Path(args[args.index("--out") + 1])
    assert out.parts[:3] == ("runs", "bench", "moe_layer") and out.suffix == ".json"
    assert cli._bench_args("moe", ["--quick", "--out", "x.json"]) == ["--quick", "--out", "x.json"]
    assert cli._bench_args("moe", []) == []  # a real measurement keeps its default place
