"""The router matrix judges each router against its row's dense twin by the pages' one rule: paired by seed,
Holm-corrected over the row's routers (8-9 a row, where non-overlapping ±1 s.e. intervals at n = 3 gave about one
false "better" a row), and naming comparisons across CPU kinds."""

from __future__ import annotations

from zoo_testing import make_record

from zoo.leaderboard.matrix import versus_dense

BORDERLINE = [0.4, 1.0, 1.5, 0.1, 1.3]  # alone against zeros: p ~ 0.03, a "better" at 95 %


def _cell(method, values, machine=None):
    return [
        make_record("router_matrix", method, "t", {"m": v}, seed=s, machine=dict(machine or {}))
        for s, v in enumerate(values)
    ]


def test_a_borderline_router_alone_is_better_but_a_tie_among_nine():
    dense = _cell("dense", [0.0] * 5)
    alone = versus_dense({"dense": dense, "r0": _cell("r0", BORDERLINE)}, "m", higher=True)
    assert alone.startswith("better than the dense twin: r0 (Δ +0.8600 [")
    row = {"dense": dense, "r0": _cell("r0", BORDERLINE)}
    row |= {f"r{k}": _cell(f"r{k}", [0.1 * k, -0.1, 0.05, -0.02, 0.0]) for k in range(1, 9)}
    verdict = versus_dense(row, "m", higher=True)
    assert verdict.startswith("**no router is better than the dense twin**; tie: r0 (Δ +0.8600 [")
    assert "worse" not in verdict


def test_the_direction_pairs_and_cpu_kinds_of_a_row():
    amd = {"cpu": "AMD EPYC", "cpu_id": "family 25 model 17 stepping 1"}
    intel = {"cpu": "Intel(R) Xeon(R) Processor", "cpu_id": "family 6 model 167 stepping 1"}
    dense = _cell("dense", [0.50, 0.52, 0.51], amd)
    lower = versus_dense({"dense": dense, "topk": _cell("topk", [0.40, 0.41, 0.42], amd)}, "m", higher=False)
    assert lower.startswith("better than the dense twin: topk (Δ +0.1000 [")  # lower mse: a gain
    other = versus_dense({"dense": dense, "topk": _cell("topk", [0.40, 0.41, 0.42], intel)}, "m", higher=False)
    assert "topk (Δ +0.1000 [" in other and other.endswith(", cells from different CPU kinds)")
    two = versus_dense({"dense": dense[:2], "topk": _cell("topk", [0.1, 0.1, 0.1])}, "m", higher=False)
    assert two == "**no router is better than the dense twin**; n too small: topk (2 pairs)"
    assert versus_dense({"topk": _cell("topk", [0.1])}, "m", higher=False) == "not enough cells run"
