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


def _result(ours_ms, floor_ms, gshard_ms, loop_ms, limit_ms):
    def row(ms):
        return {"ms": ms, "ms_all": [ms], "ratio_to_floor": ms / floor_ms}

    cells = {"ours": row(ours_ms), "floor": row(floor_ms), "gshard": row(gshard_ms), "ours_loop": row(loop_ms)}
    regime = {"results": {"64": cells, "256": cells}, "roofline": {"limits": {"256": {"limit_ms": limit_ms}}}}
    return {"config": {"experts": [64, 256]}, "regimes": {"idle-unset": regime, "contended-unset": regime}}


def test_targets_are_judged_from_the_numbers():
    met = check_targets(_result(ours_ms=110, floor_ms=100, gshard_ms=300, loop_ms=120, limit_ms=100))
    assert met and all(t.endswith("met") or "— met" in t for t in met), met
    missed = check_targets(_result(ours_ms=200, floor_ms=100, gshard_ms=300, loop_ms=120, limit_ms=100))
    assert sum("MISSED" in t for t in missed) == len(missed), missed
