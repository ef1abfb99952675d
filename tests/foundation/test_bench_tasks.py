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


def test_the_page_is_rendered_from_the_records_alone(tmp_path):
    fast = _record("fast", [11.0, 12.0, 13.0], [10.0, 10.0, 10.0])
    records = {("fast", "idle-unset"): (tmp_path / "fast.json", fast)}
    text = page.render_page(records, ["fast", "unmeasured"], tmp_path)
    assert "| fast | M vs T (D) | 12.0 | 10.0 | 1.20× |" in text
    assert "| unmeasured | no benchmark record |" in text
    assert "| MoE / twin step ≤ 1.3× (idle-unset) | fast | 1.20× | 3 |" in text
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
    assert "| MoE / twin step ≤ 1.3× (idle-unset) | fast | 1.20× | 3 |" in text  # judged idle
    assert "a-idle.json" in text and "b-contended.json" in text


def test_a_missed_target_states_the_bound_its_record_measured(tmp_path):
    slow = _record("slow", [30.0, 31.0, 29.0], [10.0, 10.0, 10.0])
    line = page.bound_line("slow", slow)
    # routing + dispatch + combine: 3 phases x 3 ms of a 40 ms profiled step; without them 30 x (1 - 0.225) / 10
    assert "22%" in line and "2.33×" in line and "4 routing call(s) of 256 tokens" in line
    assert page.bound_line("fast", _record("fast", [11.0, 12.0, 11.5], [10.0, 10.0, 10.0])) is None  # met
    assert page.bound_line("few", _record("few", [30.0, 31.0], [10.0, 10.0])) is None  # n too small: not judged


def test_a_tie_states_that_its_interval_holds_the_bar_and_what_its_work_is(tmp_path):
    close = _record("close", [12.0, 14.0, 11.0, 13.5, 12.5], [10.0, 10.0, 10.0, 10.0, 10.0])  # 1.25x, pairs 1.1-1.4x
    assert page.verdict("close", close).comparison.outcome == "tie"
    line = page.bound_line("close", close, _flop_record("close", 2_000, 1_000))
    assert line.startswith("- **close** (1.25× the twin's step, idle-unset): its median is ≤ 1.3×, but the 95 %")
    assert "it does 2.00× its twin's FLOPs per step, at 0.62× the twin's time per FLOP." in line


def test_an_agent_is_judged_on_environment_steps_per_second(tmp_path):
    agent = _record("agent", [12.0, 12.0, 12.0], [10.0, 10.0, 10.0], env=([90.0, 92.0, 91.0], [100.0, 100.0, 100.0]))
    verdict = page.verdict("agent", agent)
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
    more_work = page.bound_line("slow", slow, _flop_record("slow", 2_800, 1_000))
    assert "the bound is the MoE model's arithmetic: it does 2.80× its twin's FLOPs" in more_work
    assert "at 1.07× the twin's time per FLOP" in more_work
    same_work = page.bound_line("slow", slow, _flop_record("slow", 1_100, 1_000))
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
    line = page.bound_line("slow", slow, counted)
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
