"""The layer benchmark's targets (`zoo bench moe`), each judged on paired repetitions of one record.

Inside a regime every row of one E runs once per repetition, in a rotating order, so repetition i of *ours* and
repetition i of another row are a pair (they ran side by side under the same load). Each target turns each pair
into a gain past its bar and is judged by ``zoo.bench.claims.claim``: met when the 95 % Student-t interval of the
mean gain lies above 0, a tie when it holds 0 (never shown as met), missed below.

A target over several cells (every E of every regime) is shown by its weakest cell: of the worse cells, else the
ties, else the rest, the one with the smallest mean gain; its ``where`` names the cell and how many cells were
judged.
"""

from __future__ import annotations

from collections.abc import Callable

from zoo.bench.claims import claim, no_record
from zoo.leaderboard.compare import BETTER, TIE, TOO_FEW, WORSE
from zoo.leaderboard.targets import Verdict

ROOFLINE_BAR = 1.3  # issue #62: ours at E = 256 within 1.3x of the roofline limit, idle
ROOFLINE_BAR_EARLIER = 1.15  # the earlier target of this page, kept beside it
DISPATCH_ALTERNATIVES = ("ours_loop", "grouped_mm", "padded_bmm", "loop_mask", "naive_slice", "unbind")
_RANK = {WORSE: 0, TIE: 1, TOO_FEW: 2, BETTER: 3}


def _cell(result: dict, regime: str, e: int, row: str) -> dict | None:
    r = result["regimes"].get(regime, {}).get("results", {}).get(str(e), {}).get(row)
    return r if r and r.get("ms_all") else None


def _pairs(a: dict, b: dict) -> list[tuple[float, float]]:
    return list(zip(a["ms_all"], b["ms_all"]))


def _weakest(verdicts: list[tuple[str, Verdict]], target: str) -> Verdict | None:
    """The weakest of several cells' verdicts (see the module doc), its ``where`` naming the cell."""
    if not verdicts:
        return None

    def key(item):
        c = item[1].comparison
        return (_RANK[c.outcome], c.mean)

    where, v = min(verdicts, key=key)
    return Verdict(target, f"weakest of {len(verdicts)}: {where}", v.ours, v.met, v.comparison)


def _ratio_to_floor(result: dict, regime: str, e: int, bar: float) -> Verdict | None:
    ours, floor = _cell(result, regime, e, "ours"), _cell(result, regime, e, "floor")
    if not (ours and floor):
        return None
    gains = [bar - o / f for o, f in _pairs(ours, floor)]
    return claim(f"ours ≤ {bar}× the dense floor", f"{regime}, E={e}", f"{ours['ms'] / floor['ms']:.2f}×", gains)


def _ratio_to_roofline(result: dict, bar: float) -> Verdict | None:
    regime = result["regimes"].get("idle-unset", {})
    limit = regime.get("roofline", {}).get("limits", {}).get("256")
    ours = _cell(result, "idle-unset", 256, "ours")
    if not (limit and ours):
        return None
    gains = [bar - o / limit["limit_ms"] for o in ours["ms_all"]]
    return claim(
        f"ours ≤ {bar}× the roofline limit", "idle-unset, E=256", f"{ours['ms'] / limit['limit_ms']:.2f}×", gains
    )


def _cells(result: dict, target: str, row: str, gain: Callable[[float, float], float], shown) -> list:
    """``(where, verdict)`` of ``target`` in every regime and E where *ours* and ``row`` both ran (``gain`` of each
    pair of ms: ours, the other row's)."""
    verdicts = []
    for regime in result["regimes"]:
        for e in result["config"]["experts"]:
            ours, other = _cell(result, regime, e, "ours"), _cell(result, regime, e, row)
            if ours and other:
                gains = [gain(o, t) for o, t in _pairs(ours, other)]
                verdicts.append((f"{row}, {regime}, E={e}", claim(target, "", shown(ours, other), gains)))
    return verdicts


def _faster_than_gshard(result: dict) -> Verdict | None:
    target = "ours ≥ 2× faster than (c) GShard"
    cells = _cells(result, target, "gshard", lambda o, t: t / o - 2, lambda o, t: f"{t['ms'] / o['ms']:.2f}×")
    return _weakest(cells, target)


def _never_slower(result: dict) -> Verdict | None:
    """Ours against every dispatch variant the run measured, in every cell: the speed-up ``other / ours - 1`` past 0;
    shown by the weakest cell. As for every not-worse claim here, a tie is "not shown", and a variant faster than
    ours is a worse cell."""
    target = "ours not slower than any dispatch variant the bench measures"
    cells = [
        cell
        for row in DISPATCH_ALTERNATIVES
        for cell in _cells(
            result, target, row, lambda o, t: t / o - 1, lambda o, t: f"{o['ms'] / t['ms']:.2f}× its time"
        )
    ]
    return _weakest(cells, target)


def check_targets(result: dict) -> list[Verdict]:
    """The page's targets, judged on this run's paired repetitions (a target whose cells were not run is left out)."""
    found = [
        _ratio_to_floor(result, "idle-unset", 64, 1.2),
        _ratio_to_roofline(result, ROOFLINE_BAR),
        _ratio_to_roofline(result, ROOFLINE_BAR_EARLIER),
        _ratio_to_floor(result, "contended-unset", 64, 1.6),
        _faster_than_gshard(result),
        _never_slower(result),
    ]
    return [v for v in found if v is not None]


def not_judged(verdicts: list[Verdict]) -> list[Verdict]:
    """The same targets for a file without provenance: what it measured, no verdict."""
    return [no_record(v.target, v.where, "not judged (no benchmark record)", v.ours) for v in verdicts]


def summary(v: Verdict) -> str:
    """One line a record keeps: target, where, ours, outcome."""
    c = v.comparison
    return f"{v.target} ({v.where}): {v.ours} — {c.verdict if c else v.outcome}"
