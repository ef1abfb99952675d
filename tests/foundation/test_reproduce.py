"""`zoo reproduce` writes one record per run, skips recorded runs, and renders a table with the published
numbers beside ours."""

import json

import pytest
from zoo_testing import run_zoo

from zoo.leaderboard.cpu_identity import cpu_identity
from zoo.leaderboard.settings import SETTINGS_KEY

pytestmark = pytest.mark.slow(reason="zoo reproduce grids of the toy task, each run a real fit in a zoo process")


def test_reproduce_records_resumes_and_renders(zoo_env, tmp_path):
    board = tmp_path / "board"
    args = ["reproduce", "toy", "--leaderboard", str(board), "--runs", str(tmp_path / "runs")]
    interleaved = run_zoo([*args, "--dry-run", "--interleave"], zoo_env, tmp_path)
    assert "moe / digits seed=0\n  dense / digits seed=0\n  moe / digits seed=1" in interleaved.stdout
    # the team's checkout has others' uncommitted work: --allow-dirty (the records then list the files)
    first = run_zoo([*args, "--only", "dense", "--allow-dirty", "--threads", "2"], zoo_env, tmp_path)
    assert first.returncode == 0, first.stderr[-3000:]
    records = sorted((board / "results" / "toy").glob("*.json"))
    assert [p.name for p in records] == ["dense__digits__seed0.json"]
    rec = json.loads(records[0].read_text())
    for key in (
        "task",
        "method",
        "dataset",
        "metrics",
        "seed",
        "config",
        "versions",
        "wall_time_s",
        "commit",
        "machine",
        "reduced",
    ):
        assert key in rec
    assert rec["reduced"] is True and 0.5 < rec["metrics"]["test/acc"] <= 1.0
    assert rec["config"]["model"]["init_args"]["num_experts"] == 0
    assert rec["extra"]["resumed_from_checkpoint"] is False
    # the test pass loads the best checkpoint, whose stored training time must not be counted twice
    assert rec["extra"]["wall_time_before_resume_s"] == 0
    assert len(rec["source_hash"]) == 64
    assert rec["machine"]["torch_threads"] == 2  # --threads, whatever OMP_NUM_THREADS says
    assert rec["machine"]["cpu_isa"] == cpu_identity()["cpu_isa"]  # the kernels' instruction set (AVX2, AVX512, ...)

    # a killed run's folder holding another model's checkpoint (the row's config changed) is refused, not resumed
    runs = tmp_path / "runs" / "reproduce" / "toy"
    stale = runs / "moe__digits__seed0" / "checkpoints"
    stale.mkdir(parents=True)
    (stale / "last.ckpt").write_bytes((runs / "dense__digits__seed0" / "checkpoints" / "last.ckpt").read_bytes())
    refused = run_zoo([*args, "--only", "moe", "--allow-dirty"], zoo_env, tmp_path)
    assert refused.returncode != 0 and "Traceback" not in refused.stdout + refused.stderr
    assert "FAILED moe__digits__seed0: ConfigError" in refused.stdout  # the whole user-facing message, no traceback
    assert "num_experts" in refused.stdout and f"delete {stale.parent}" in refused.stdout
    assert not (board / "results" / "toy" / "moe__digits__seed0.json").exists()
    assert (board / "results" / "toy" / "moe__digits__seed1.json").exists()  # the grid went on
    (stale / "last.ckpt").unlink()

    again = run_zoo([*args, "--dry-run"], zoo_env, tmp_path)
    assert "1 runs to do (3 in the benchmark, 2 recorded)" in again.stdout
    assert "dense / digits" not in again.stdout and "seed=1" not in again.stdout
    assert "moe / digits seed=0" in again.stdout
    # its time: the wall time of the row's one record (seed 1), every other run of the row being recorded
    took = json.loads((board / "results" / "toy" / "moe__digits__seed1.json").read_text())["wall_time_s"]
    assert f"about {took:.0f} s of one process at the wall times recorded for their rows' settings\n" in again.stdout

    excluded = run_zoo([*args, "--dry-run", "--exclude", "moe"], zoo_env, tmp_path)
    assert "0 runs to do" in excluded.stdout

    page = (board / "toy.md").read_text()
    assert "| dataset | moe | dense | moe (published) | Reference (published) |" in page
    assert "(n=1) † " in page and "| 0.900 | 0.950 |" in page
    assert "[toy](toy.md)" in (board / "README.md").read_text()


def test_rerun_stale_replaces_records_of_other_code_and_never_resumes_their_final_checkpoint(zoo_env, tmp_path):
    board, runs = tmp_path / "board", tmp_path / "runs"
    args = ["reproduce", "toy", "--leaderboard", str(board), "--runs", str(runs), "--only", "dense", "--allow-dirty"]
    assert run_zoo(args, zoo_env, tmp_path).returncode == 0
    path = board / "results" / "toy" / "dense__digits__seed0.json"
    rec = json.loads(path.read_text())
    rec["source_hash"] = "written-by-older-code"
    path.write_text(json.dumps(rec))

    plain = run_zoo([*args, "--dry-run"], zoo_env, tmp_path)
    assert "0 runs to do" in plain.stdout  # without the flag a recorded row stays recorded
    listed = run_zoo([*args, "--dry-run", "--rerun-stale"], zoo_env, tmp_path)
    assert "1 runs to do (3 in the benchmark, 1 recorded, 1 of them stale)" in listed.stdout
    assert "dense / digits seed=0  (runs afresh: the old run's folder is set aside)" in listed.stdout

    rerun = run_zoo([*args, "--rerun-stale"], zoo_env, tmp_path)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert "(re-run of a stale record)" in rerun.stdout
    old_run = runs / "reproduce" / "toy" / "dense__digits__seed0.replaced-0"
    assert (old_run / "checkpoints" / "last.ckpt").exists()  # the old run's final checkpoint was not resumed
    assert "max |Δ| vs the old record = 0 (" in rerun.stdout  # same code, same threads: same numbers
    new = json.loads(path.read_text())
    assert new["source_hash"] != "written-by-older-code" and new["extra"]["resumed_from_checkpoint"] is False
    again = run_zoo([*args, "--dry-run", "--rerun-stale"], zoo_env, tmp_path)
    assert "0 runs to do (3 in the benchmark, 1 recorded, 0 of them stale)" in again.stdout


def test_a_run_that_raises_is_reported_in_one_line_and_the_grid_goes_on(zoo_env, tmp_path):
    board, runs = tmp_path / "board", tmp_path / "runs"
    args = ["reproduce", "toy", "--leaderboard", str(board), "--runs", str(runs), "--allow-dirty"]
    out = run_zoo(args, {**zoo_env, "ZOO_TOY_FAIL_SEED": "1"}, tmp_path)  # seed 1 of the moe row raises
    assert out.returncode == 1
    log = runs / "reproduce" / "toy" / "moe__digits__seed1" / "error.log"
    assert f"  FAILED moe__digits__seed1: RuntimeError: toy run broken on purpose (traceback: {log})" in out.stdout
    assert "Traceback" not in out.stdout + out.stderr and "Traceback" in log.read_text()
    assert "1 runs failed, no record written: moe__digits__seed1" in out.stdout
    results = board / "results" / "toy"
    assert sorted(p.name for p in results.glob("*.json")) == ["dense__digits__seed0.json", "moe__digits__seed0.json"]
    again = run_zoo([*args, "--dry-run"], zoo_env, tmp_path)
    assert "1 runs to do" in again.stdout  # the failed run is still to do, the others are recorded


def test_verify_reruns_a_record_and_fails_when_a_metric_moved(zoo_env, tmp_path):
    board, runs = tmp_path / "board", tmp_path / "runs"
    base = ["reproduce", "toy", "--leaderboard", str(board), "--runs", str(runs)]
    assert run_zoo([*base, "--only", "dense", "--allow-dirty", "--threads", "1"], zoo_env, tmp_path).returncode == 0
    path = board / "results" / "toy" / "dense__digits__seed0.json"
    recorded = json.loads(path.read_text())

    same = run_zoo([*base, "--verify", "dense__digits__seed0"], zoo_env, tmp_path)
    assert same.returncode == 0, same.stdout[-3000:] + same.stderr[-3000:]
    assert "dense__digits__seed0 (recorded at " in same.stdout and "max |Δ| = 0: repeats" in same.stdout
    assert json.loads(path.read_text()) == recorded  # verifying never rewrites the record
    assert len(list((runs / "verify" / "toy" / "dense__digits__seed0").iterdir())) == 1  # a fresh run folder
    assert "settings changed" not in same.stdout and "cpu" not in same.stdout  # same CPU: no note

    recorded["metrics"]["test/acc"] -= 0.25
    recorded["extra"][SETTINGS_KEY] = "written-with-other-settings"
    here_isa = cpu_identity()["cpu_isa"]
    other_isa = "AVX2" if here_isa == "AVX512" else "AVX512"  # another kind than this machine's, whichever it is
    recorded["machine"]["cpu_isa"] = other_isa
    del recorded["machine"]["cpu_id"]  # as in records from before zoo.leaderboard.cpu_identity
    path.write_text(json.dumps(recorded))
    moved = run_zoo([*base, "--verify", str(path)], zoo_env, tmp_path)
    assert moved.returncode == 1 and "DIFFERS (tolerance 1e-06)" in moved.stdout
    assert "max |Δ| = 0.25" in moved.stdout
    assert "note: the row's settings changed since the record" in moved.stdout
    assert f"note: cpu_isa: record {other_isa!r}, here {here_isa!r}" in moved.stdout
    assert "note: the record does not name its cpu_id" in moved.stdout

    unknown = run_zoo([*base, "--verify", "dense__digits__seed7"], zoo_env, tmp_path)
    assert unknown.returncode != 0 and "Traceback" not in unknown.stdout + unknown.stderr
    assert "no record" in unknown.stdout + unknown.stderr
