"""`zoo bench tasks` (issue 62 item 1): every task's training step against its dense twin, the steps of both models
run one at a time in turn in one process, medians compared, the mixture's time split into routing, dispatch, expert
GEMMs and combine; a task that cannot run says why in one line; the page is rendered from the records alone."""

from __future__ import annotations

import json
import re
import statistics
import threading

import pytest
from zoo_testing import need_dataset

from zoo.bench import task_speed_page as page
from zoo.bench.phase_split import PHASES
from zoo.bench.step_clock import Baton
from zoo.bench.task_pairs import BENCH_TRAINER, pair_for
from zoo.bench.task_step import measure, overlaps
from zoo.cli import main as cli
from zoo.registry import BenchmarkRow, TaskSpec, get_task

REPEATS = 3


@pytest.fixture(scope="module")
def seer_pair(tmp_path_factory):
    """SEER's tiny conformance model and its dense twin (dense.yaml, the same sizes), timed in turn on ETT-small."""
    need_dataset("ETT-small")
    spec = get_task("seer")
    case = next(c for c in spec.conformance if c.name == "seer")
    root = tmp_path_factory.mktemp("seer-pair")
    builds = {
        role: (spec.config_path(config), [*case.overrides, *BENCH_TRAINER, f"--trainer.default_root_dir={root / role}"])
        for role, config in (("moe", "seer.yaml"), ("dense", "dense.yaml"))
    }
    return measure(builds, warmup=1, repeats=REPEATS, profiled=1)


def test_the_two_models_steps_run_in_turn_and_never_overlap(seer_pair):
    order = seer_pair["order"]
    assert len(order) == 2 * (REPEATS + 1)  # timed and profiled steps of both
    assert all(a != b for a, b in zip(order, order[1:])), order
    assert seer_pair["overlaps"] == 0
    assert len(seer_pair["moe"]["wall_ms"]) == len(seer_pair["dense"]["wall_ms"]) == REPEATS


def test_medians_and_the_ratio_are_moe_over_dense(seer_pair):
    moe, dense = seer_pair["moe"], seer_pair["dense"]
    assert moe["median_ms"] == statistics.median(moe["wall_ms"]) and dense["median_ms"] == statistics.median(
        dense["wall_ms"]
    )
    assert seer_pair["ratio"] == pytest.approx(moe["median_ms"] / dense["median_ms"], rel=1e-3)
    assert seer_pair["pair_ratios"] == pytest.approx([m / d for m, d in zip(moe["wall_ms"], dense["wall_ms"])], 1e-3)
    assert moe["parameters"] > 0 and "env_share" not in seer_pair  # SEER does not step an environment


def test_the_split_sees_the_mixture_parts_and_sums_to_at_most_the_step(seer_pair):
    split = seer_pair["moe"]["split"]
    total = sum(p["forward_ms"] + p["backward_ms"] for p in split["phases"].values())
    assert 0 < total <= split["profiled_step_ms"]
    assert all(split["phases"][p]["ranges"] > 0 for p in PHASES)  # SEER's MoE embedding routes and dispatches
    assert split["phases"]["experts"]["backward_ms"] > 0 and split["tokens_per_call"] > 0
    dense = seer_pair["dense"]["split"]
    assert dense["routing_calls"] == 0 and dense["phases"]["routing"]["ranges"] == 0  # the twin has no mixture


def test_a_baton_gives_the_turn_to_one_runner_at_a_time():
    baton, trace, lock = Baton(["a", "b"]), [], threading.Lock()

    def run(name: str) -> None:
        for _ in range(5):
            baton.wait(name)
            with lock:
                trace.append(name)
            baton.pass_on(name)
        baton.leave(name)

    threads = [threading.Thread(target=run, args=(n,)) for n in "ab"]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=20)
    assert trace == ["a", "b"] * 5
    assert overlaps([("a", 0.0, 1.0), ("b", 1.0, 2.0)]) == 0 and overlaps([("a", 0.0, 1.5), ("b", 1.0, 2.0)]) == 1


def test_the_pair_is_the_first_dense_twin_on_the_first_dataset_both_ran():
    rows = (
        BenchmarkRow("moe", "A", "a.yaml"),
        BenchmarkRow("moe", "B", "b.yaml"),
        BenchmarkRow("dense", "B", "bd.yaml"),
    )
    spec = TaskSpec("t", "", "m:M", {}, "/tmp", benchmark=rows, dense_twins=(("moe", "dense"),))
    pair = pair_for(spec)
    assert (pair.moe.config, pair.dense.config) == ("b.yaml", "bd.yaml")
    reason = pair_for(TaskSpec("t", "", "m:M", {}, "/tmp", benchmark=rows))
    assert isinstance(reason, str) and "\n" not in reason


def test_a_task_whose_data_is_missing_gets_a_one_line_record_and_row(tmp_path, monkeypatch):
    for var in ("ZOO_DATA_MIRROR", "ZOO_DATA_DIR", "ZOO_CACHE_DIR"):
        monkeypatch.setenv(var, str(tmp_path / "empty"))
    out = tmp_path / "out"
    assert cli.main(["bench", "tasks", "--task", "seer", "--repeats", "1", "--out", str(out)]) == 0
    record = json.loads((out / "seer.json").read_text())
    assert record["status"] == "not measured" and "regimes" not in record
    assert "ETT-small" in record["reason"] and "\n" not in record["reason"]
    assert record["commit"] and record["source_hash"] and record["command"].startswith("zoo bench tasks --task seer")
    text = (out / "task_speed.md").read_text()
    assert f"| seer | not measured: {record['reason']} |" in text


def _record(task: str, moe: list[float], dense: list[float], env: tuple[list, list] | None = None) -> dict:
    """A measured record as ``zoo bench tasks`` writes it, with made-up numbers."""

    def model(wall, rates):
        phases = {p: {"forward_ms": 1.0, "backward_ms": 2.0, "ranges": 1} for p in PHASES}
        split = {"profiled_step_ms": 40.0, "phases": phases, "routing_calls": 4, "tokens_per_call": 256.0}
        return {
            "wall_ms": wall,
            "median_ms": statistics.median(wall),
            "median_env_steps_per_s": statistics.median(rates) if rates else None,
            "split": split,
        }

    regime = {"status": "measured", "moe": model(moe, env and env[0]), "dense": model(dense, env and env[1])}
    regime["ratio"] = regime["moe"]["median_ms"] / regime["dense"]["median_ms"]
    regime["pair_ratios"] = [m / d for m, d in zip(moe, dense)]
    if env:
        regime["pair_env_shares"] = [m / d for m, d in zip(*env)]
        regime["env_share"] = regime["moe"]["median_env_steps_per_s"] / regime["dense"]["median_env_steps_per_s"]
    pair = {
        r: {"method": m, "dataset": "D", "config": "c.yaml", "overrides": []} for r, m in (("moe", "M"), ("dense", "T"))
    }
    return {"bench": "tasks", "task": task, "date": "2026-01-01T00:00:00Z", "status": "measured", "pair": pair,
            "regimes": {"idle-unset": regime}}  # fmt: skip


def _runs(task: str, ratios: list[float], env: bool = False) -> list[dict]:
    """One record per run of the bench, each of three pairs at ``ratios[i]`` times the twin's step (agents: ``env``,
    the same as env-steps/s shares)."""
    runs = []
    for i, r in enumerate(ratios):
        shares = ([100.0 * r] * 3, [100.0] * 3) if env else None
        run = _record(task, [10.0 * r, 10.0 * r, 10.0 * r], [10.0, 10.0, 10.0], env=shares)
        run["date"] = f"2026-01-0{i + 1}T00:00:00Z"
        runs.append(run)
    return runs


def test_a_target_is_judged_over_runs_and_one_run_of_many_pairs_is_not_enough(tmp_path):
    """Each run gives one value (the median of its pairs): one run, however many pairs it holds, is one value, not a
    verdict; runs that spread more than one run's pairs do give the tie their spread calls for."""
    one_run = _record("one", [11.0 + 0.01 * i for i in range(60)], [10.0] * 60)  # 60 tight pairs at 1.1x
    assert page.verdict("one", one_run).comparison.outcome == "n too small"
    met = _runs("met", [1.1, 1.12, 1.08])
    assert page.verdict("met", met[-1], met).met
    spread = _runs("spread", [1.22, 1.27, 1.33])  # DroneDINO's three runs: each of them alone looked decided
    judged = page.verdict("spread", spread[-1], spread)
    assert judged.comparison.outcome == "tie" and judged.ours == "1.27×" and judged.comparison.n == 3
    agents = _runs("agent", [0.9, 0.92, 0.91], env=True)
    assert page.verdict("agent", agents[-1], agents).met


def test_the_runs_are_the_records_of_the_newest_ones_code_on_its_cpu_kind(tmp_path):
    runs = _runs("t", [1.1, 1.2, 1.3, 1.4, 1.5])
    for run in runs:
        run.update(source_hash="new", machine={"cpu": "AMD EPYC", "cpu_id": "family 25 model 1 stepping 1"})
    runs[0]["source_hash"] = "old"  # other code
    runs[1]["machine"] = {"cpu": "Intel Xeon", "cpu_id": "family 6 model 106 stepping 6"}  # other CPU kind
    runs[2]["regimes"] = {"contended-unset": runs[2]["regimes"].pop("idle-unset")}  # not measured idle
    for i, run in enumerate(runs):
        (tmp_path / f"{i}.json").write_text(json.dumps(run))
    (tmp_path / "other-task.json").write_text(json.dumps({**runs[3], "task": "u"}))
    found = page.runs_of(runs[4], page.bench_records(tmp_path))
    assert [path.name for path, _ in found] == ["3.json", "4.json"]
    records = page.newest_records(tmp_path)
    text = page.render_page(records, ["t"], tmp_path)
    assert "| MoE / twin step ≤ 1.3× (idle-unset) | t | 1.45× | 2 |" in text
    assert all(f"`{name}`" in text or f"{name})" in text for name in ("3.json", "4.json"))  # named under the table


def test_the_page_is_rendered_from_the_records_alone(tmp_path):
    fast = _record("fast", [11.0, 12.0, 13.0], [10.0, 10.0, 10.0])
    records = {("fast", "idle-unset"): (tmp_path / "fast.json", fast)}
    text = page.render_page(records, ["fast", "unmeasured"], tmp_path)
    assert "| fast | M vs T (D) | 12.0 | 10.0 | 1.20× |" in text
    assert "| unmeasured | no benchmark record |" in text
    assert "| MoE / twin step ≤ 1.3× (idle-unset) | fast | 1.20× | 1 |" in text  # one run: n too small
    empty = page.render_page({}, ["fast", "unmeasured"], tmp_path)
    rows = [line for line in empty.splitlines() if line.startswith(("| fast", "| unmeasured"))]
    assert rows and not any(re.search(r"\d", line) for line in rows)  # no record, no number


def test_the_step_ratio_is_the_median_of_the_pairs_not_the_ratio_of_two_medians_of_other_batches(tmp_path):
    # batches of very different cost, as WestWorld's robots: each pair (one batch) is 1.1x, but the two medians
    # come from different batches and their ratio (300 / 500) would read 0.6x
    ragged = _record("ragged", [110.0, 1100.0, 300.0], [100.0, 1000.0, 500.0])
    assert ragged["regimes"]["idle-unset"]["ratio"] == 0.6
    assert page.step_ratio(ragged["regimes"]["idle-unset"]) == 1.1
    text = page.render_page({("ragged", "idle-unset"): (tmp_path / "r.json", ragged)}, ["ragged"], tmp_path)
    assert "| ragged | M vs T (D) | 300 | 500 | 1.10× |" in text


def test_an_idle_run_and_a_later_contended_run_are_both_on_the_page(tmp_path):
    idle = _record("fast", [11.0, 12.0, 13.0], [10.0, 10.0, 10.0])
    contended = _record("fast", [22.0, 26.0, 24.0], [20.0, 20.0, 20.0])
    contended["regimes"] = {"contended-unset": contended["regimes"].pop("idle-unset")}
    contended["date"] = "2026-02-01T00:00:00Z"  # newer than the idle record
    for name, record in (("a-idle.json", idle), ("b-contended.json", contended)):
        (tmp_path / name).write_text(json.dumps(record))
    records = page.newest_records(tmp_path)
    assert {key: path.name for key, (path, _) in records.items()} == {
        ("fast", "idle-unset"): "a-idle.json",
        ("fast", "contended-unset"): "b-contended.json",
    }
    text = page.render_page(records, ["fast"], tmp_path)
    assert "| fast | M vs T (D) | 12.0 | 10.0 | 1.20× |" in text  # idle table, from the older record
    assert "| fast | M vs T (D) | 24.0 | 20.0 | 1.20× |" in text  # contended table, from the newer one
    assert "| MoE / twin step ≤ 1.3× (idle-unset) | fast | 1.20× | 1 |" in text  # judged idle
    assert "a-idle.json" in text and "b-contended.json" in text


SLOW_RUNS = [1.0, 1.02, 0.98]  # three runs' step ratios as factors of a record's own


def _slow_runs(slow: dict) -> list[dict]:
    """Three runs of ``slow`` (the last is ``slow`` itself): its step ratio, 2% above and below."""
    ratio = page.step_ratio(slow["regimes"]["idle-unset"])
    return [*_runs("slow", [ratio * f for f in SLOW_RUNS[1:]]), slow]


def test_a_missed_target_states_the_bound_its_record_measured(tmp_path):
    slow = _record("slow", [30.0, 31.0, 29.0], [10.0, 10.0, 10.0])
    line = page.bound_line("slow", slow, runs=_slow_runs(slow))
    # routing + dispatch + combine: 3 phases x 3 ms of a 40 ms profiled step; without them 30 x (1 - 0.225) / 10
    assert "22%" in line and "2.33×" in line and "4 routing call(s) of 256 tokens" in line
    assert page.bound_line("fast", (fast := _runs("fast", [1.1, 1.15, 1.12]))[-1], runs=fast) is None  # met
    assert page.bound_line("few", slow) is None  # one run: n too small, not judged


def test_a_tie_states_that_its_interval_holds_the_bar_and_what_its_work_is(tmp_path):
    close = _runs("close", [1.1, 1.4, 1.25, 1.35, 1.2])  # median 1.25x, runs 1.1-1.4x
    assert page.verdict("close", close[-1], close).comparison.outcome == "tie"
    line = page.bound_line("close", close[-1], _flop_record("close", 2_000, 1_000), runs=close)
    assert line.startswith("- **close** (1.25× the twin's step, median of 5 runs, idle-unset): its median is ≤ 1.3×")
    assert "it does 2.00× its twin's FLOPs per step, at 0.62× the twin's time per FLOP." in line


def test_an_agent_is_judged_on_environment_steps_per_second(tmp_path):
    agent = _record("agent", [12.0, 12.0, 12.0], [10.0, 10.0, 10.0], env=([90.0, 92.0, 91.0], [100.0, 100.0, 100.0]))
    runs = [*_runs("agent", [0.9, 0.93], env=True), agent]
    verdict = page.verdict("agent", agent, runs)
    assert verdict.target.startswith("env steps/s ≥ 0.8×") and verdict.ours == "0.91×" and verdict.met


def _flop_record(task: str, moe: int, dense: int, calls: tuple[int, int] | None = None) -> dict:
    counted = {"status": "measured", "moe": {"flops": moe}, "dense": {"flops": dense}, "flop_ratio": moe / dense}
    if calls:
        counted["moe"]["calls"], counted["dense"]["calls"] = calls
        counted["call_ratio"] = calls[0] / calls[1]
    return {"bench": "tasks", "task": task, "date": "2026-01-01T00:00:00Z", "status": "measured",
            "settings": {"regimes": ["flops"]}, "regimes": {"flops": counted}}  # fmt: skip


def test_a_missed_target_is_told_apart_as_arithmetic_or_execution_by_the_flop_count(tmp_path):
    slow = _record("slow", [30.0, 31.0, 29.0], [10.0, 10.0, 10.0])  # 3.00x the twin's step
    more_work = page.bound_line("slow", slow, _flop_record("slow", 2_800, 1_000), _slow_runs(slow))
    assert "the bound is the MoE model's arithmetic: it does 2.80× its twin's FLOPs" in more_work
    assert "at 1.07× the twin's time per FLOP" in more_work
    same_work = page.bound_line("slow", slow, _flop_record("slow", 1_100, 1_000), _slow_runs(slow))
    assert "the bound is the execution of its work" in same_work and "2.73× the twin's time per FLOP" in same_work
    records = {("slow", "idle-unset"): (tmp_path / "a.json", slow), ("slow", "flops"): (tmp_path / "b.json", None)}
    records[("slow", "flops")] = (tmp_path / "b.json", _flop_record("slow", 2_800, 1_000))
    text = page.render_page(records, ["slow"], tmp_path)
    assert "| slow | 2.8e-06 | 1e-06 | 2.80× | 3.00× | 1.07× |" in text
    assert [line for line in text.splitlines() if line.startswith("## ")].count("## FLOPs per training step") == 1
    assert "| flops |" not in text  # the counting pseudo-regime is no timing table


def test_an_execution_bound_names_how_many_more_operations_the_step_issues(tmp_path):
    slow = _record("slow", [30.0, 31.0, 29.0], [10.0, 10.0, 10.0])
    counted = _flop_record("slow", 1_100_000, 1_000_000, calls=(400, 100))
    line = page.bound_line("slow", slow, counted, _slow_runs(slow))
    assert "it issues 4.00× the twin's ATen calls per step, of 2.75 k FLOPs on average against the twin's 10 k" in line
    records = {("slow", "idle-unset"): (tmp_path / "a.json", slow), ("slow", "flops"): (tmp_path / "b.json", counted)}
    assert "| 1.10× | 3.00× | 2.73× | 400 | 100 | 2.75 k | 10 k |" in page.render_page(records, ["slow"], tmp_path)


def test_the_flop_count_of_a_training_step_is_the_closed_form_of_its_matrix_products():
    import torch

    from zoo.bench.flop_step import CountedStep
    from zoo.moe import MoE

    torch.manual_seed(0)
    layer, tokens, dim, hidden, experts, k = MoE(dim=16, num_experts=4, top_k=2, hidden=32), 50, 16, 32, 4, 2
    counted = CountedStep(layer)
    counted.start()
    layer(torch.randn(tokens, dim, requires_grad=True))[0].sum().backward()
    flops = counted.stop()["flops"]
    gate = 2 * tokens * dim * experts  # the router's linear layer
    ffn = 2 * tokens * k * (dim * hidden + hidden * dim)  # every routed slot through both expert matrices
    assert flops == 3 * (gate + ffn)  # forward, and the input and weight gradients of each product


def test_every_aten_call_of_the_step_is_counted_with_or_without_a_flop_formula():
    import torch

    from zoo.bench.flop_step import CountedStep

    a, b = torch.randn(4, 3), torch.randn(3, 5)
    counted = CountedStep(torch.nn.Identity())
    counted.start()
    torch.relu(torch.mm(a, b)).add_(1.0)
    assert counted.stop() == {"flops": 2 * 4 * 3 * 5, "calls": 3}  # mm, relu, add_


def test_a_step_that_takes_its_gradients_with_autograd_grad_is_counted_too():
    """``torch.autograd.grad`` through a module called on a leaf that needs a gradient (as in SPHERE's update):
    FlopCounterMode's module tracker raises there ("A leaf node was passed to _will_engine_execute_node"); the
    counter counts it like a backward."""
    import torch

    from zoo.bench.flop_step import CountedStep

    net, x = torch.nn.Linear(8, 4), torch.randn(10, 8, requires_grad=True)
    counted = CountedStep(net)
    counted.start()
    torch.autograd.grad(net(x).sum(), [x, *net.parameters()])
    assert counted.stop()["flops"] == 3 * (2 * 10 * 8 * 4)  # forward, the input gradient and the weight gradient
