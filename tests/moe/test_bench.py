"""`zoo bench moe --quick` runs end to end in its regimes and writes its JSON and table (a smoke test, not a timing)."""

import json

import pytest

from zoo.bench import contention, roofline
from zoo.bench.moe import ROWS, check_targets, main


@pytest.mark.slow(reason="one process per regime of the layer bench")
def test_bench_quick_runs_each_regime_in_its_own_process(tmp_path):
    out = tmp_path / "moe.json"
    argv = ["--quick", "--out", str(out), "--experts", "4", "--reps", "1", "--tokens", "64", "--threads", "1"]
    argv += ["--regimes", "idle-unset,contended-passive", "--rows", ",".join(ROWS), "--companion-threads", "1"]
    assert main(argv) == 0
    result = json.loads(out.read_text())
    assert result["command"] == "zoo bench moe " + " ".join(argv)  # a benchmark record (zoo.bench.provenance)
    assert result["source_hash"] and result["commit"] and result["machine"]["regime"] == "idle-unset,contended-passive"
    assert list(result["regimes"]) == ["idle-unset", "contended-passive"]
    for name, policy in (("idle-unset", "unset"), ("contended-passive", "PASSIVE")):
        regime = result["regimes"][name]
        assert regime["machine"]["omp_wait_policy"] == policy  # the child really ran with that policy
        rows = regime["results"]["4"]
        assert set(ROWS) <= set(rows)
        assert all(rows[r]["max_abs_diff_vs_ours"] < 1e-4 for r in ROWS if r not in ("floor", "gshard", "ours"))
        assert regime["roofline"]["gemm_gflops"] > 0 and regime["roofline"]["triad_gbps"] > 0
        assert "in its own process" in regime["memory_method"]  # peaks from the memory process, not the timed one
        assert all(rows[r]["peak_extra_mib"] is not None for r in ROWS)
    page = out.with_suffix(".md").read_text()
    assert "## contended, OMP_WAIT_POLICY=PASSIVE" in page and "## Against the physical limit" in page


def test_unknown_regime_is_one_clear_error(capsys):
    with pytest.raises(SystemExit):
        main(["--quick", "--regimes", "idle-unset,busy"])
    assert "unknown regimes busy" in capsys.readouterr().err


def test_companion_is_stopped_after_the_block():
    with contention.companion(threads=1, settle_s=0.2) as proc:
        assert proc.poll() is None
    assert proc.poll() is not None


def test_env_for_sets_or_removes_the_policy(monkeypatch):
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")
    assert "OMP_WAIT_POLICY" not in contention.env_for(None)
    assert contention.env_for("PASSIVE")["OMP_WAIT_POLICY"] == "PASSIVE"


def test_roofline_counts_flops_and_compulsory_bytes():
    cost = roofline.step_cost(tokens=10, dim=4, hidden=8, top_k=2, experts=3)
    assert cost["flops"] == 6 * 20 * (4 * 8 + 8 * 4)
    assert cost["bytes"] == 3 * 4 * 3 * 64 + 6 * 4 * 20 * (4 + 8 + 4)
    lim = roofline.limit(cost, rate=1e9, bandwidth=1e9)
    assert lim["limit_ms"] == max(lim["compute_ms"], lim["memory_ms"])


def _result(ours_ms, floor_ms, gshard_ms, loop_ms, limit_ms, jitter=(0.0, 1.0, -1.0, 0.5, -0.5)):
    """A record's numbers: five paired repetitions per row, each row's ms + the same small jitter per repetition."""

    def row(ms):
        return {"ms": ms, "ms_all": [ms + j for j in jitter], "ratio_to_floor": ms / floor_ms}

    cells = {"ours": row(ours_ms), "floor": row(floor_ms), "gshard": row(gshard_ms), "ours_loop": row(loop_ms)}
    regime = {"results": {"64": cells, "256": cells}, "roofline": {"limits": {"256": {"limit_ms": limit_ms}}}}
    return {"config": {"experts": [64, 256]}, "regimes": {"idle-unset": regime, "contended-unset": regime}}


def _outcomes(verdicts):
    return {v.target: v.comparison.outcome for v in verdicts}


def test_targets_are_judged_on_paired_repetitions():
    met = check_targets(_result(ours_ms=110, floor_ms=100, gshard_ms=300, loop_ms=120, limit_ms=100))
    assert len(met) == 6 and all(v.met for v in met), [(v.target, v.comparison) for v in met]
    missed = check_targets(_result(ours_ms=200, floor_ms=100, gshard_ms=300, loop_ms=120, limit_ms=100))
    assert set(_outcomes(missed).values()) == {"worse"}
    assert all(v.met is False for v in missed)


def test_a_target_at_its_bar_within_the_noise_is_a_tie_never_met():
    at_bar = _result(ours_ms=120, floor_ms=100, gshard_ms=300, loop_ms=120, limit_ms=100, jitter=(0, 3, -3, 2, -2))
    verdicts = {v.target: v for v in check_targets(at_bar)}
    assert verdicts["ours ≤ 1.2× the dense floor"].comparison.outcome == "tie"  # 1.20x, repetitions on both sides
    assert verdicts["ours ≤ 1.2× the dense floor"].met is False
    slower = verdicts["ours not slower than any dispatch variant the bench measures"]
    assert slower.comparison.outcome == "tie" and slower.where.startswith("weakest of 4: ours_loop")


def test_a_target_over_every_cell_is_shown_by_its_weakest_cell():
    result = _result(ours_ms=110, floor_ms=100, gshard_ms=300, loop_ms=120, limit_ms=100)
    contended = result["regimes"]["contended-unset"] = json.loads(json.dumps(result["regimes"]["idle-unset"]))
    contended["results"]["256"]["ours_loop"]["ms_all"] = [100.0, 101.0, 99.0, 100.5, 99.5]  # faster than ours there
    verdicts = {v.target: v for v in check_targets(result)}
    slower = verdicts["ours not slower than any dispatch variant the bench measures"]
    assert slower.comparison.outcome == "worse" and slower.where == "weakest of 4: ours_loop, contended-unset, E=256"
