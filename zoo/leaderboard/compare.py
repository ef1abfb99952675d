"""The one rule by which a leaderboard page says that one thing is better than another (issue 57).

Every comparison a page prints (targets, "X beats Y" sentences, the router matrix, the summary against the dense
twin) ends in one of four outcomes:

- **better** / **worse**: the 95 % interval of the mean *gain* lies above / below 0;
- **tie**: the interval contains 0 (a difference of +0.0000 is a tie, and so is +0.0013 with a spread of 0.002);
- **n too small**: fewer than ``MIN_PAIRS`` (3) pairs, so there is no interval worth the name; never a win or a loss.

The gain is oriented by the metric (positive = ours better: ``ours - theirs`` for a higher-is-better metric,
``theirs - ours`` for a lower-is-better one) and measured against the claim's bar: a margin ("beats Y by ≥ m") is
subtracted from it, a ratio ("≥ 1.5× Y") tests ``ours - 1.5 · theirs``. Two cells are compared **paired**: one gain
per (seed, fold) both cells have run (``ResultTable.values``), so the seed's shared luck (data order,
initialisation) cancels. A cell against a published constant is a one-sample interval of its runs' gains.

The interval is Student's t with n - 1 degrees of freedom on the mean of the n gains. Chosen over a bootstrap
because the zoo's cells hold 3 to 10 runs: a bootstrap of 3 values has 10 distinct resamples and an interval far
too narrow, while t is exact for normal gains and widens with small n as it should (at n = 3 its half-width is
4.3 standard errors). The p-value is the two-sided t-test of "mean gain = 0", so ``p < 0.05`` exactly when the
95 % interval excludes 0.

Several comparisons in one row (a router-matrix row: 8-9 routers against the dense twin; a target naming several
baselines) are Holm-corrected (``holm``): the row's p-values are adjusted step-down and each interval is drawn at
a level that agrees with its adjusted verdict, so the chance that a row prints any false "better" stays ≤ 5 %; Holm
rather than Bonferroni because it is uniformly more powerful under the same guarantee, and rather than a
false-discovery rate because each printed "better" is read as a claim of its own.

Records from different CPU kinds may differ in their last bits through the CPU's kernels alone (see
``cpu_identity``): a comparison whose two cells hold runs known to come from different CPU kinds says so in its
verdict ("tie (cells from different CPU kinds)").
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from zoo.leaderboard.record import RunRecord
from zoo.leaderboard.results_table import ResultTable

LEVEL = 0.95
ALPHA = 1 - LEVEL
MIN_PAIRS = 3
BETTER, TIE, WORSE, TOO_FEW = "better", "tie", "worse", "n too small"
MARKS = {BETTER: "better ✓", TIE: "tie =", WORSE: "worse ✗", TOO_FEW: "n too small"}
OTHER_CPU = "cells from different CPU kinds"
_CPU_KEYS = ("cpu", "cpu_isa", "cpu_id")


def _student_t():
    """scipy's Student t, imported when first needed: every task spec imports the targets, and ``zoo list`` loads
    every spec without judging anything."""
    from scipy.stats import t

    return t


@dataclass(frozen=True)
class Comparison:
    """A mean gain over ``n`` pairs (or runs, against a constant), its standard error and two-sided p-value.

    ``level``: the confidence level of ``interval`` (0.95, or a Holm level inside a row); ``p``: the p-value the
    outcome is read from (Holm-adjusted inside a row); ``note``: what the verdict must say besides its outcome
    (``OTHER_CPU``)."""

    n: int
    mean: float
    se: float
    p: float
    level: float = LEVEL
    note: str = ""

    @property
    def outcome(self) -> str:
        if self.n < MIN_PAIRS:
            return TOO_FEW
        if self.p < ALPHA:
            return BETTER if self.mean > 0 else WORSE
        return TIE

    @property
    def interval(self) -> tuple[float, float]:
        """The two-sided ``level`` t-interval of the mean gain (NaN below two pairs)."""
        if self.n < 2:
            return math.nan, math.nan
        half = float(_student_t().ppf(1 - (1 - self.level) / 2, self.n - 1)) * self.se
        return self.mean - half, self.mean + half

    @property
    def verdict(self) -> str:
        """The outcome as a page prints it: ``better ✓``, ``tie =``, ``worse ✗`` or ``n too small``, plus the note."""
        return MARKS[self.outcome] + (f" ({self.note})" if self.note else "")

    def delta(self, percent: bool = False) -> str:
        """``+0.0012 [-0.0008, +0.0032]``: the mean gain and its interval (``—`` without pairs; no interval below
        two); ``percent`` for gains that are fractions."""
        if not self.n:
            return "—"
        low, high = self.interval
        text = fmt_gain(self.mean, (self.mean, low, high), percent)
        if math.isnan(low):
            return text
        level = "" if math.isclose(self.level, LEVEL) else f" at {self.level:.1%}"
        return f"{text} [{fmt_gain(low, (low, high), percent)}, {fmt_gain(high, (low, high), percent)}]{level}"


def fmt_gain(value: float, scale: Sequence[float] = (), percent: bool = False) -> str:
    """A signed gain: four decimals below 10 (MSE, accuracy, AP: differences live in the third and fourth
    decimal), two below 100, one above; ``scale``: the values whose size sets the decimals (a gain and its
    interval read alike)."""
    if percent:
        return f"{0.0 if abs(value) < 1e-12 else value * 100:+.1f} %"
    size = max((abs(v) for v in (value, *scale) if math.isfinite(v)), default=0.0)
    digits = 4 if size < 10 else 2 if size < 100 else 1
    if abs(value) < 1e-12:  # float noise of a zero difference reads +0; a small true negative keeps its -0.0000
        value = 0.0
    return f"{value:+.{digits}f}"


def gain(ours: float, bar: float, higher: bool) -> float:
    """How far ``ours`` is past ``bar`` in the metric's direction; 0 where they agree to float rounding (so that
    0.2 × 1.5 = 0.30000000000000004 reaches 0.3)."""
    if math.isclose(ours, bar, rel_tol=1e-9, abs_tol=1e-12):
        return 0.0
    return ours - bar if higher else bar - ours


def t_comparison(gains: Iterable[float], note: str = "") -> Comparison:
    """The rule on gains already oriented and measured against the claim's bar."""
    values = list(gains)
    n = len(values)
    if not n:
        return Comparison(0, math.nan, math.nan, math.nan, note=note)
    mean = statistics.fmean(values)
    if n < 2:
        return Comparison(n, mean, math.nan, math.nan, note=note)
    se = statistics.stdev(values) / math.sqrt(n)
    if se == 0:  # every pair differs by the same amount (deterministic runs): no doubt about its sign
        p = 1.0 if mean == 0 else 0.0
    else:
        p = float(2 * _student_t().sf(abs(mean) / se, n - 1))
    return Comparison(n, mean, se, p, note=note)


def paired_gains(
    ours: Mapping, theirs: Mapping, higher: bool, margin: float = 0.0, ratio: float | None = None
) -> list[float]:
    """One gain per key both mappings hold (in key order): ``ours - theirs`` in the metric's direction less
    ``margin``, or with ``ratio``: ``ours - ratio · theirs`` (higher is better) / ``theirs / ratio - ours``."""
    out = []
    for key in sorted(set(ours) & set(theirs), key=repr):
        a, b = ours[key], theirs[key]
        if ratio is not None:
            out.append(gain(a, ratio * b if higher else b / ratio, higher))
        else:
            out.append(gain(a, b, higher) - margin)
    return out


def paired(
    ours: Mapping,
    theirs: Mapping,
    higher: bool,
    margin: float = 0.0,
    ratio: float | None = None,
    note: str = "",
) -> Comparison:
    """Two cells (key -> value, e.g. ``ResultTable.values``) compared over the keys both hold."""
    return t_comparison(paired_gains(ours, theirs, higher, margin, ratio), note)


def against(values: Iterable[float], bar: float, higher: bool) -> Comparison:
    """A cell's runs against a constant (a published number, a required value)."""
    return t_comparison(gain(v, bar, higher) for v in values)


def holm(comparisons: Sequence[Comparison], alpha: float = ALPHA) -> list[Comparison]:
    """The comparisons of one row, Holm-corrected: p-values step-down adjusted over the m comparisons that have an
    interval (n ≥ ``MIN_PAIRS``; the others are not tested and stay "n too small"). Intervals are drawn so that each
    agrees with its outcome: a comparison Holm rejects (rank r in p order, from 0) at level 1 - alpha / (m - r),
    which excludes 0; the k it does not reject at 1 - alpha / k, which holds 0 (Bonferroni over those k). Same order
    as given; a row with fewer than two tested comparisons is returned unchanged."""
    tested = sorted((i for i, c in enumerate(comparisons) if c.n >= MIN_PAIRS), key=lambda i: comparisons[i].p)
    m = len(tested)
    out = list(comparisons)
    if m < 2:
        return out
    adjusted, rejected = 0.0, 0
    for rank, i in enumerate(tested):
        adjusted = max(adjusted, min(1.0, (m - rank) * comparisons[i].p))
        rejected += adjusted < alpha
        out[i] = replace(comparisons[i], p=adjusted)
    for rank, i in enumerate(tested):
        level = 1 - alpha / (m - rank if rank < rejected else m - rejected)
        out[i] = replace(out[i], level=level)
    return out


def cpu_kind(record: RunRecord) -> dict[str, str]:
    """What the record says of its CPU kind: model name, instruction set, family / model / stepping (the keys it
    has; records older than ``cpu_isa`` / ``cpu_id`` name the model only)."""
    machine = record.machine or {}
    return {k: str(machine[k]) for k in _CPU_KEYS if machine.get(k)}


def different_kinds(a: Mapping[str, str], b: Mapping[str, str]) -> bool:
    """Whether two CPU kinds are known to differ: a key both name with different values (an unrecorded field is
    not taken as a difference: the old records' AMD model was not written down)."""
    return any(a[k] != b[k] for k in a.keys() & b.keys())


def cpu_note(ours: Iterable[RunRecord], theirs: Iterable[RunRecord]) -> str:
    """``OTHER_CPU`` when a run of one cell and a run of the other are known to come from different CPU kinds."""
    kinds_a = {tuple(sorted(cpu_kind(r).items())) for r in ours}
    kinds_b = {tuple(sorted(cpu_kind(r).items())) for r in theirs}
    return OTHER_CPU if any(different_kinds(dict(a), dict(b)) for a in kinds_a for b in kinds_b) else ""


Cells = tuple[str, str] | Sequence[tuple[str, str]]


def _cells(cells: Cells) -> list[tuple[str, str]]:
    return [cells] if isinstance(cells[0], str) else list(cells)  # type: ignore[list-item]


def _pooled(table: ResultTable, cells: list[tuple[str, str]], metric: str) -> dict:
    """(cell index, seed, fold) -> value over ``cells``."""
    return {(i, *key): v for i, cell in enumerate(cells) for key, v in table.values(*cell, metric).items()}


def _records(table: ResultTable, cells: list[tuple[str, str]], keys: set) -> list[RunRecord]:
    return [r for i, cell in enumerate(cells) for r in table.records_of(*cell) if (i, r.seed, r.fold) in keys]


def compare_cells(
    table: ResultTable,
    metric: str,
    ours: Cells,
    theirs: Cells,
    margin: float = 0.0,
    ratio: float | None = None,
) -> Comparison:
    """``ours`` = (method, dataset) against ``theirs`` on ``metric``, paired by (seed, fold), in the metric's
    direction (``ResultTable.higher``); the verdict names different CPU kinds of the paired runs.

    A claim over several datasets passes equal-length lists of cells, paired in order: every (seed, fold) that the
    i-th cells of both lists hold is one pair, so a cell with more runs weighs more and the spread between cells
    widens the interval (conservative for "better on average over these cells")."""
    ours_cells, their_cells = _cells(ours), _cells(theirs)
    a, b = _pooled(table, ours_cells, metric), _pooled(table, their_cells, metric)
    keys = set(a) & set(b)
    note = cpu_note(_records(table, ours_cells, keys), _records(table, their_cells, keys))
    return paired(a, b, metric in table.higher, margin, ratio, note)


def compare_to_value(table: ResultTable, metric: str, cell: tuple[str, str], bar: float) -> Comparison:
    """A cell's runs against a constant on ``metric``, in the metric's direction."""
    return against(table.values(*cell, metric).values(), bar, metric in table.higher)
