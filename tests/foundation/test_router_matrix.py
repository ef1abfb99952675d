"""`zoo reproduce matrix` (issue 26): every router and the dense twin on a task's matrix row, each tuned with the
same budget on validation, then tested on the row's seeds; routers that cannot route the mixture get their
reason; the page is generated from the records alone and resumes."""

import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from zoo_testing import hang_guard, make_record, run_zoo

from zoo.leaderboard.matrix import render_matrix

# the tests that run `zoo reproduce matrix` (each cell tuned, fitted and tested in zoo processes); the page's own
# tests below stay in the fast tier
E2E = pytest.mark.slow(reason="zoo reproduce matrix end to end: tuned, fitted and tested cells")


@E2E
def test_matrix_tunes_runs_and_marks_routers_that_do_not_apply(zoo_env, tmp_path):
    board, runs = tmp_path / "board", tmp_path / "runs"
    args = ["reproduce", "matrix", "--only", "toy", "--routers", "topk,expert_choice", "--allow-dirty"]
    args += ["--threads", "1", "--leaderboard", str(board), "--runs", str(runs)]
    # torch would take 2 threads from the environment; --threads 1 must win. (One thread, not two: on a loaded
    # 2-core machine two spin-waiting OpenMP threads made this tiny MLP's steps ~100x slower.)
    env = {**zoo_env, "OMP_NUM_THREADS": "2"}
    first = run_zoo(args, env, tmp_path)
    assert first.returncode == 0, first.stderr[-3000:]
    results = board / "results" / "router_matrix"
    assert sorted(p.name for p in results.glob("*.json")) == ["dense__toy__seed0.json", "topk__toy__seed0.json"]
    record = json.loads((results / "topk__toy__seed0.json").read_text())
    assert record["config"]["model"]["init_args"]["router"] == "topk"
    assert record["machine"]["torch_threads"] == 1  # --threads pins every tuned and tested run
    tuning = record["extra"]["tuning"]
    assert tuning["trials"] == 2 and tuning["metric"] == "val/acc" and "lr" in tuning["space"]
    assert record["config"]["model"]["init_args"]["lr"] == tuning["params"]["model.init_args.lr"]
    assert record["config"]["trainer"]["max_epochs"] == 2  # the matrix row's overrides
    reasons = [json.loads(line) for line in (results / "not_applicable.jsonl").read_text().splitlines()]
    assert reasons[0]["router"] == "expert_choice" and "per-sample mixture" in reasons[0]["reason"]
    page = (board / "router_matrix.md").read_text()
    assert "| toy (test/acc ↑) |" in page and "n/a (1)" in page and "[1]" in page
    assert "(1) router R cannot route the toy's per-sample mixture" in page
    again = run_zoo(args + ["--dry-run"], env, tmp_path)
    assert again.returncode == 0 and "runs to do" not in again.stdout  # everything recorded or marked n/a
    assert record["extra"]["cell_settings_sha256"]  # the cell's settings, told apart from a later spec's


def _toy_row(page: str) -> str:
    return next(line for line in page.splitlines() if line.startswith("| toy "))


@E2E
def test_a_cell_of_older_code_is_marked_and_rerun_stale_replaces_it(zoo_env, tmp_path):
    board, runs = tmp_path / "board", tmp_path / "runs"
    args = ["reproduce", "matrix", "--only", "toy", "--routers", "topk", "--allow-dirty", "--threads", "1"]
    args += ["--leaderboard", str(board), "--runs", str(runs)]
    assert run_zoo(args, zoo_env, tmp_path).returncode == 0
    path = board / "results" / "router_matrix" / "topk__toy__seed0.json"
    first = json.loads(path.read_text())
    path.write_text(json.dumps({**first, "source_hash": "older code"}))
    assert run_zoo(["render", "matrix", "--leaderboard", str(board)], zoo_env, tmp_path).returncode == 0
    page = (board / "router_matrix.md").read_text()
    assert _toy_row(page).endswith(" ° |")  # the topk column, the last
    assert "- toy: " in page and "a verdict on mixed runs" in page.split("- toy: ")[1].splitlines()[0]
    assert "--rerun-stale` re-runs them" in page
    assert "runs to do" not in run_zoo(args + ["--dry-run"], zoo_env, tmp_path).stdout  # kept without the flag
    planned = run_zoo(args + ["--rerun-stale", "--dry-run"], zoo_env, tmp_path).stdout
    assert "timed 1 by their rows' other cells" in planned  # the stale record's own time is not evidence
    rerun = run_zoo(args + ["--rerun-stale"], zoo_env, tmp_path)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert "toy / topk: 1 runs to do, 1 of them stale" in rerun.stdout and "toy / dense" not in rerun.stdout
    assert "the study in" not in rerun.stdout  # the study ran today's code: its choice is read back, not re-searched
    again = json.loads(path.read_text())
    assert again["source_hash"] == first["source_hash"] and again["metrics"] == first["metrics"]
    rerun_page = (board / "router_matrix.md").read_text()
    assert " °" not in _toy_row(rerun_page) and "a verdict on mixed runs" not in rerun_page


@E2E
def test_a_cell_whose_model_now_refuses_its_router_loses_its_old_records(zoo_env, tmp_path):
    """MoE-GS once ran KERN (l2-normalised weights blending images) and later refused it: the old records go, so the
    page shows the cell's n/a, not numbers today's code cannot make."""
    board, runs = tmp_path / "board", tmp_path / "runs"
    args = ["reproduce", "matrix", "--only", "toy", "--routers", "topk", "--allow-dirty", "--threads", "1"]
    args += ["--leaderboard", str(board), "--runs", str(runs)]
    assert run_zoo(args, zoo_env, tmp_path).returncode == 0
    results = board / "results" / "router_matrix"
    made_by_older_code = json.loads((results / "topk__toy__seed0.json").read_text())
    made_by_older_code.update(method="expert_choice", source_hash="older code")
    (results / "expert_choice__toy__seed0.json").write_text(json.dumps(made_by_older_code))
    refused = run_zoo([*args[:5], "expert_choice", *args[6:], "--rerun-stale"], zoo_env, tmp_path)
    assert refused.returncode == 0, refused.stderr[-3000:]
    assert "removed its 1 records of older code: expert_choice__toy__seed0.json" in refused.stdout
    assert sorted(p.name for p in results.glob("*.json")) == ["dense__toy__seed0.json", "topk__toy__seed0.json"]
    row = _toy_row((board / "router_matrix.md").read_text())
    assert "n/a (1)" in row and " °" not in row


@E2E
def test_rerun_stale_reprobes_a_cell_older_code_marked_not_applicable(zoo_env, tmp_path):
    board, runs = tmp_path / "board", tmp_path / "runs"
    results = board / "results" / "router_matrix"
    results.mkdir(parents=True)
    older = {"task": "toy", "router": "topk", "reason": "router 'topk' cannot route the toy's older mixture"}
    (results / "not_applicable.jsonl").write_text(json.dumps(older) + "\n")
    args = ["reproduce", "matrix", "--only", "toy", "--routers", "topk", "--allow-dirty", "--threads", "1"]
    args += ["--leaderboard", str(board), "--runs", str(runs)]
    kept = run_zoo(args, zoo_env, tmp_path)
    assert kept.returncode == 0 and "toy / topk" not in kept.stdout  # without the flag, an n/a stands
    rerun = run_zoo(args + ["--rerun-stale"], zoo_env, tmp_path)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert "toy / topk: was n/a, the model builds with it now" in rerun.stdout
    assert (results / "not_applicable.jsonl").read_text().strip() == ""
    assert (results / "topk__toy__seed0.json").is_file()
    assert "n/a" not in _toy_row((board / "router_matrix.md").read_text())


def test_a_study_of_other_code_or_settings_is_not_resumed(tmp_path):
    from zoo.runner.tuning import STUDY_CODE, other_study

    made_by = {"source_hash": "a", "settings": "b"}
    assert not other_study(tmp_path / "none", made_by, unmarked_is_other=True)
    (tmp_path / "study.journal").write_text("")
    assert not other_study(tmp_path, made_by)  # from before the marks: kept unless the caller knows it is stale
    assert other_study(tmp_path, made_by, unmarked_is_other=True)
    (tmp_path / STUDY_CODE).write_text(json.dumps(made_by))
    assert not other_study(tmp_path, made_by, unmarked_is_other=True)
    assert other_study(tmp_path, {**made_by, "settings": "c"})


def test_matrix_page_ranks_within_a_row_and_reports_health():
    routing = {"test": {"block": {"load_entropy": 0.9, "dead_experts": 1, "dropped_tokens": 5, "tokens": 100}}}
    records = [
        make_record("router_matrix", "dense", "t", {"test/mse": 0.5}, seed=0),
        make_record("router_matrix", "topk", "t", {"test/mse": 0.4}, seed=0, routing=routing),
        make_record("router_matrix", "topk", "t", {"test/mse": 0.6}, seed=1, routing=routing),
        make_record("router_matrix", "soft", "t", {"test/mse": 0.45}, seed=0),
    ]
    page = render_matrix(records, {"t": ("test/mse", False)}, ["soft", "topk", "kern"], {("t", "kern"): "no"})
    row = next(line for line in page.splitlines() if line.startswith("| t (test/mse ↓)"))
    assert "0.5000 ± 0.0000 (1) [2]" in row and "0.5000 ± 0.1414 (2) [3]" in row and "0.4500 ± 0.0000 (1) [1]" in row
    assert "n/a (1)" in row and "(1) no" in page
    assert "°" not in page
    marked = render_matrix(records, {"t": ("test/mse", False)}, ["soft", "topk"], {}, stale=lambda r: r.seed == 1)
    row = next(line for line in marked.splitlines() if line.startswith("| t (test/mse ↓)"))
    assert "0.5000 ± 0.1414 (2) [3] °" in row and "0.4500 ± 0.0000 (1) [1] |" in row and "--rerun-stale" in marked
    assert "| t | — | 0.900 / 1.0 / 0.050 | — |" in page


def test_matrix_page_says_which_routers_beat_the_dense_twin_by_the_paired_rule():
    def cell(method, values):
        return [make_record("router_matrix", method, "t", {"test/acc": v}, seed=i) for i, v in enumerate(values)]

    records = cell("dense", [0.80, 0.81, 0.82]) + cell("topk", [0.84, 0.85, 0.86])  # +0.04 on every seed
    records += cell("soft", [0.79, 0.83, 0.87]) + cell("kern", [0.70, 0.71, 0.72])  # spread over 0 / below
    page = render_matrix(records, {"t": ("test/acc", True), "u": ("test/acc", True)}, ["kern", "soft", "topk"], {})
    assert "- t: better than the dense twin: topk (Δ +0.0400 [+0.0400, +0.0400] at 97.5%); tie: soft (Δ +0.0200" in page
    assert "worse: kern (Δ -0.1000 [-0.1000, -0.1000] at 98.3%)" in page
    assert "- u: not enough cells run" in page
    tie = render_matrix(cell("dense", [0.8, 0.9]) + cell("topk", [0.85, 0.95]), {"t": ("test/acc", True)}, ["topk"], {})
    assert "- t: **no router is better than the dense twin**; n too small: topk (2 pairs)" in tie
    one_seed = render_matrix(
        records + cell("grouped", [0.5]), {"t": ("test/acc", True)}, ["grouped", "kern", "topk"], {}
    )
    assert "; n too small: grouped (1 pair)" in one_seed


def test_matrix_page_times_each_row_with_its_tuning_measured_or_estimated():
    def cell(method, task, walls, tuning):
        extra = {"tuning": tuning}
        return [
            make_record("router_matrix", method, task, {"test/acc": 0.8}, seed=i, wall_time_s=w, extra=extra)
            for i, w in enumerate(walls)
        ]

    timed = {"trials": 2, "trial_wall_s": [1800.0, 900.0]}
    records = cell("dense", "t", [1800, 1800], timed) + cell("topk", "t", [900, 900], {"trials": 0})
    records += cell("dense", "u", [1800, 3600], {"trials": 2})  # a record from before trial times: 2 x 2700 s
    page = render_matrix(records, {"t": ("test/acc", True), "u": ("test/acc", True)}, ["topk"], {})
    assert "| t | 2 | 1.50 | 0.75 | 2.25 | ?, ? cores: 4 |" in page  # the records name no machine
    assert "| u | 1 | 1.50 | ≈ 1.50 | ≈ 3.00 | ?, ? cores: 2 |" in page


def test_matrix_page_names_each_rows_cpu_kinds():
    amd = {"cpu": "AMD EPYC", "cores": 2, "cpu_isa": "AVX2", "cpu_id": "family 25 model 1 stepping 1"}
    records = [
        make_record("router_matrix", "dense", "t", {"test/acc": 0.8}, seed=0, machine=amd),
        make_record("router_matrix", "topk", "t", {"test/acc": 0.7}, seed=0, machine=amd),
        make_record("router_matrix", "dense", "u", {"test/acc": 0.8}, seed=0, machine={"cpu": "Intel", "cores": 2}),
    ]
    page = render_matrix(records, {"t": ("test/acc", True), "u": ("test/acc", True)}, ["topk"], {})
    assert "| AMD EPYC, 2 cores, AVX2, family 25 model 1 stepping 1: 2 |" in page.split("| t |")[-1].splitlines()[0]
    assert "| Intel, 2 cores: 1 |" in page.split("| u |")[-1].splitlines()[0]


def test_a_cell_reads_its_tuning_back_from_records_of_the_current_code():
    """On a new machine the study under runs/ is gone: the cell's remaining seeds reuse the recorded choice (the
    same config as its recorded seeds), unless the code changed since or the study had fewer trials."""
    from zoo.code_closure import closure_hash, run_roots
    from zoo.runner.matrix_tuning import recorded_tuning

    tuning = dict(params={"model.init_args.lr": 0.01}, overrides=["--model.init_args.lr=0.01"], value=0.9)
    tuning.update(metric="val/acc", direction="maximize", trials=4, pruned=0, space="lr", seed=1000, study="s")
    current = closure_hash(run_roots({}))

    def rec(seed, source_hash, trials=4, method="topk"):
        extra = {"tuning": {**tuning, "trials": trials}}
        return make_record("router_matrix", method, "t", {"test/acc": 0.8}, seed, source_hash=source_hash, extra=extra)

    assert recorded_tuning([rec(0, current)], "t", "topk", 4).overrides == ["--model.init_args.lr=0.01"]
    assert recorded_tuning([rec(0, "older code")], "t", "topk", 4) is None
    assert recorded_tuning([rec(0, current, trials=2)], "t", "topk", 4) is None  # a smaller study: tune again
    assert recorded_tuning([rec(0, current, method="soft")], "t", "topk", 4) is None
    odd = rec(0, current)
    odd.extra["tuning"]["renamed_field"] = 1  # a TuneResult of another version: tune again, do not crash
    assert recorded_tuning([odd], "t", "topk", 4) is None


def test_matrix_page_names_the_tasks_without_a_row():
    records = [make_record("router_matrix", "dense", "t", {"test/acc": 0.8}, seed=0)]
    page = render_matrix(records, {"t": ("test/acc", True)}, ["topk"], {}, without_row=["u", "a"])
    assert "Not in the table: a, u (their specs name no matrix row; the notes say why)." in page
    assert "Not in the table" not in render_matrix(records, {"t": ("test/acc", True)}, ["topk"], {})


def test_the_page_is_not_rewritten_while_a_task_with_records_fails_to_load(tmp_path, monkeypatch):
    import zoo.runner.matrix_page as matrix
    from zoo.errors import ConfigError
    from zoo.leaderboard.record import write_record
    from zoo.registry import PluginLoad

    write_record(make_record("router_matrix", "dense", "broken", {"test/acc": 0.8}, seed=0), tmp_path)
    (tmp_path / "router_matrix.md").write_text("the last good page\n")
    failed = [PluginLoad("broken", "pkg.spec:SPEC", None, "ImportError: half-installed")]
    monkeypatch.setattr(matrix, "discover", lambda: failed)
    with pytest.raises(ConfigError, match=r"broken \(ImportError: half-installed\)"):
        matrix.page(tmp_path)
    assert (tmp_path / "router_matrix.md").read_text() == "the last good page\n"
    monkeypatch.setattr(matrix, "discover", lambda: [PluginLoad("other", "x:Y", None, "ImportError: no")])
    assert "| broken" in matrix.page(tmp_path).read_text()  # a broken plugin without records does not stop the page


STAGED = """
import dataclasses, sys
from pathlib import Path
from zoo.runner.matrix_requires import run_requirements
from zoo.registry import get_task
from zoo.tuning.matrix_row import StagedMatrixRow

spec = get_task("toy")
staged = StagedMatrixRow(**{**dataclasses.asdict(spec.matrix), "requires": (sys.argv[2],)})
sys.exit(run_requirements(dataclasses.replace(spec, matrix=staged), Path(sys.argv[1]), dry_run=len(sys.argv) > 3))
"""


@E2E
def test_a_staged_row_runs_what_its_model_needs_first_once_per_seed(zoo_env, tmp_path):
    """MoE-GS's router stage loads the experts its own seed trained: the matrix fits the required rows for the
    tuning seed and each of the row's seeds before any cell, once, and a failed one is counted (its cells skipped)."""

    runs = tmp_path / "runs"

    def staged(*args, env=zoo_env):
        return subprocess.run(
            [sys.executable, "-c", STAGED, str(runs), *args], env=env, cwd=tmp_path, capture_output=True, text=True
        )

    listed = staged("dense/digits", "--dry-run")
    assert listed.returncode == 0 and "dense/digits seed=1000" in listed.stdout and "seed=0" in listed.stdout
    assert not (runs / "reproduce").exists()
    first = staged("dense/digits")
    assert first.returncode == 0, first.stderr[-3000:]
    folders = sorted((runs / "reproduce" / "router_matrix" / "requires").iterdir())
    assert [f.name for f in folders] == ["toy__dense__digits__seed0", "toy__dense__digits__seed1000"]
    done = json.loads((folders[0] / "requirement.json").read_text())
    assert done["metrics"]["test/acc"] > 0.5 and done["code_and_settings"]["source_hash"]
    again = staged("dense/digits")
    assert again.returncode == 0 and "to do" not in again.stdout  # done runs are not run again
    elsewhere = staged("dense/digits", "--dry-run", env={**zoo_env, "ZOO_CACHE_DIR": str(tmp_path / "other")})
    assert "2 to do" in elsewhere.stdout  # their outputs are not in another cache folder
    missing = staged("nope/digits")
    assert missing.returncode != 0 and "nope/digits" in missing.stderr


def _lines_until(proc: subprocess.Popen, text: str, seconds: float | None = None) -> list[str]:
    """``proc``'s output lines up to the first holding ``text``; a process that never prints it is killed after
    ``seconds``, so a test of code that waits instead of going on fails instead of hanging. (A hang guard, not a
    time limit: long enough for a loaded 2-core machine.)"""
    watchdog = threading.Timer(hang_guard(150) if seconds is None else seconds, proc.kill)
    watchdog.start()
    lines = []
    try:
        for line in proc.stdout:
            lines.append(line)
            if text in line:
                break
    finally:
        watchdog.cancel()
    return lines


def _goes_on_past_what_is_held(args, env, cwd, held, skipped: str, later: str, not_yet: Path) -> str:
    """Run ``args`` while this process holds ``held``: it must say ``skipped``, go on to print ``later`` before
    ``not_yet`` exists, then, once ``held`` is released, finish with exit 0. Returns its output from there on."""
    proc = subprocess.Popen(args, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        lines = _lines_until(proc, later)
        assert any(skipped in line for line in lines), lines
        assert not not_yet.exists()
        held.release()  # the other process stopped (or finished): this one does the held work now
        out, err = proc.communicate(timeout=hang_guard(300))  # a hang guard only
    finally:
        held.release()
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err[-3000:]
    return out


@E2E
def test_a_required_run_another_process_fits_is_left_for_later(zoo_env, tmp_path):
    """Two processes sharing the table fit two of a staged row's required runs at once: the second skips the run the
    first holds, fits the next, then comes back to the held one."""
    from zoo.runner.run_lock import RunLock

    runs = tmp_path / "runs"
    held = RunLock(runs / "reproduce" / "router_matrix" / "requires" / "toy__dense__digits__seed1000")
    assert held.acquire()
    args = [sys.executable, "-c", STAGED, str(runs), "dense/digits"]
    skipped = "seed=1000: another process fits it; back to it after the others"
    done = held.path.parent / "requirement.json"
    out = _goes_on_past_what_is_held(args, zoo_env, tmp_path, held, skipped, "seed=0: {", done)
    assert "dense/digits seed=1000: {" in out and done.is_file()


def test_router_overrides_reach_the_router_cells_only():
    from zoo.registry import MatrixRow
    from zoo.tuning.matrix_row import StagedMatrixRow, cell_overrides, requires

    staged = StagedMatrixRow("moe/d", "dense/d", overrides=("--a=1",), router_overrides=("--b=2",), requires=("x/d",))
    assert cell_overrides(staged, None) == ("--a=1",) and cell_overrides(staged, "topk") == ("--a=1", "--b=2")
    plain = MatrixRow("moe/d", "dense/d", overrides=("--a=1",))
    assert cell_overrides(plain, "topk") == ("--a=1",) and requires(plain) == () and requires(staged) == ("x/d",)


def test_the_dry_run_times_each_cell_by_the_records_closest_to_its_settings():
    from zoo.registry import BenchmarkRow
    from zoo.runner.matrix_time import MatrixTime

    moe, dense = BenchmarkRow("moe", "d", "c.yaml"), BenchmarkRow("dense", "d", "c.yaml")

    def rec(method, wall, task="router_matrix", dataset="t"):
        return make_record(task, method, dataset, {"test/acc": 0.8}, wall_time_s=wall)

    matrix = [rec("topk", 100.0), rec("topk", 300.0), rec("dense", 50.0)]
    bench = [rec("moe", 1000.0, "t", "d"), rec("dense", 900.0, "t", "d")]
    timing = MatrixTime()
    timing.add("topk", moe, 1, 2, matrix, bench)  # its own records: 3 x 200 s
    timing.add("soft", moe, 2, 0, matrix, bench)  # the other router cells: 2 x 200 s
    timing.add("dense", dense, 1, 0, matrix[:2], bench)  # no dense record: the router cells, 200 s
    timing.add("dense", dense, 1, 1, [], bench)  # nothing of the matrix: the benchmark row, 2 x 900 s
    timing.add("dense", BenchmarkRow("gone", "d", "c.yaml"), 1, 0, [], bench)
    assert timing.seconds == 600 + 400 + 200 + 1800 and (timing.runs, timing.trials) == (5, 3)
    line = timing.line()
    assert "about 50 min of one process: 5 runs and 3 tuning trials" in line
    assert "3 by the cells' own records, 2 by their rows' cells of the same kind, 1 by their rows' other cells" in line
    assert "2 by benchmark records of their rows; not counted: 1 runs" in line
    assert MatrixTime().line().startswith("how long: unknown")


@E2E
def test_a_cell_another_process_tunes_is_left_for_later_not_waited_for(zoo_env, tmp_path):
    """Two processes sharing the table tune two cells at once: the second skips the cell whose study the first holds
    and comes back to it after its other cells."""
    from zoo.runner.run_lock import RunLock

    board, runs = tmp_path / "board", tmp_path / "runs"
    held = RunLock(runs / "tune" / "toy" / "moe__digits__topk")  # as if another process were tuning topk
    assert held.acquire()
    args = [sys.executable, "-m", "zoo.cli.main", "reproduce", "matrix", "--only", "toy", "--routers", "topk,soft"]
    args += ["--allow-dirty", "--threads", "1", "--leaderboard", str(board), "--runs", str(runs)]
    skipped = "another process tunes this cell; back to it after the others"
    record = board / "results" / "router_matrix" / "topk__toy__seed0.json"
    _goes_on_past_what_is_held(args, zoo_env, tmp_path, held, skipped, "soft__toy__seed0", record)
    assert record.is_file()


def test_a_cell_record_of_other_matrix_settings_is_not_current():
    """A matrix record stores its cell's settings (the row's arguments, the matrix overrides, the router): when the
    spec's matrix row changes them, the record is stale although the code is the same."""
    from zoo.code_closure import closure_hash, run_roots
    from zoo.leaderboard.settings import settings_fingerprint
    from zoo.registry import get_task
    from zoo.runner.matrix_cells import CELL_SETTINGS, cell_args, cell_is_current

    spec = get_task("seer")
    config = {"model": {"class_path": "zoo_tasks.timeseries.seer.SEERForecaster"}}
    today = closure_hash(run_roots(config))

    def rec(settings, source_hash=today):
        extra = {} if settings is None else {CELL_SETTINGS: settings}
        return make_record("router_matrix", "topk", "seer", {"test/mse": 0.4}, 0, config=config, extra=extra,
                           source_hash=source_hash)  # fmt: skip

    settings = settings_fingerprint(cell_args(spec, "topk", 0, None))
    assert cell_is_current(spec, rec(settings))
    assert not cell_is_current(spec, rec("the matrix row ran 2 epochs then"))
    assert cell_is_current(spec, rec(None))  # from before cells stored their settings: judged by its code
    assert not cell_is_current(spec, rec(settings, source_hash="older code"))
    assert settings != settings_fingerprint(cell_args(spec, "soft", 0, None))  # the router is part of a cell
