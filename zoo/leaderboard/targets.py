"""Claims and targets a task declares as data (``TaskSpec.targets``), judged on its records by one renderer.

Each target turns a `ResultTable` into `Verdict` rows: what was claimed, where, what we measured, the comparison
behind it (``zoo.leaderboard.compare``: n, the gain and its 95 % interval, better / tie / worse / n too small) and
whether the claim is met (``None`` while the comparison has too few runs). What a target claims decides which
outcomes meet it: a claim of improvement ("X > Y", "beats Y by ≥ m", "≥ 1.5× Y", "improves") is met by **better**
only; a claim of reaching a bar or of non-inferiority ("X ≥ Y", "not worse", "within 10 % of published", "≥ 0.83")
by **better** or **tie**. "Better" follows the metric's direction (``TaskSpec.higher_is_better``).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from zoo.errors import ConfigError
from zoo.leaderboard.compare import (
    BETTER,
    TIE,
    TOO_FEW,
    WORSE,
    Comparison,
    compare_cells,
    compare_to_value,
    gain,
    holm,
    t_comparison,
)
from zoo.leaderboard.numbers import fmt_number
from zoo.leaderboard.results_table import ResultTable

IMPROVES = frozenset({BETTER})  # what meets a claim of improvement
# What meets a claim of reaching a bar or not being worse: also "better" only. A tie there means "not shown": with
# n = 3 noisy runs an interval wide enough to hold the bar would otherwise "meet" any bar (the SimBa twin 18-20 %
# below its published return was "within 10 %" that way). The claim column says so apart from "not met".
NOT_WORSE = IMPROVES


@dataclass(frozen=True)
class Verdict:
    """One line of a page's Targets table: the claim, where, what we measured, whether the claim is met, and the
    comparison it rests on (None for a row that counts other rows' outcomes, whose ``outcome`` says the counts).
    ``percent``: the comparison's gains are fractions (shown in %)."""

    target: str
    where: str
    ours: str
    met: bool | None
    comparison: Comparison | None = None
    outcome: str = ""
    percent: bool = False


def claim_met(comparison: Comparison, meets: frozenset[str]) -> bool | None:
    """Whether the comparison's outcome meets a claim that ``meets`` those outcomes; None for n too small."""
    return None if comparison.outcome == TOO_FEW else comparison.outcome in meets


def _fmt(value: float) -> str:
    return "—" if math.isnan(value) else fmt_number(value)


def _cell(table: ResultTable, method: str, dataset: str, metric: str) -> str:
    """``0.821 (n=3)``: the cell's mean over its runs."""
    return f"{_fmt(table.mean(method, dataset, metric))} (n={table.count(method, dataset, metric)})"


def _sign(table: ResultTable, metric: str, strict: bool = False) -> str:
    if metric in table.higher:
        return ">" if strict else "≥"
    return "<" if strict else "≤"


def _counts(verdicts: list[Verdict]) -> str:
    """``2 better, 5 tie, 1 worse, 3 n too small`` over the rows' comparisons (outcomes that occur)."""
    outcomes = [v.comparison.outcome for v in verdicts if v.comparison is not None]
    return ", ".join(f"{outcomes.count(o)} {o}" for o in (BETTER, TIE, WORSE, TOO_FEW) if o in outcomes) or "—"


def _share_met(met: int, open_: int, needed: float) -> bool | None:
    """A "met on ≥ needed of the cells" claim: True once met, False once out of reach, else None."""
    if met >= needed:
        return True
    return False if met + open_ < needed else None


@dataclass(frozen=True)
class BeatsBestPublished:
    """``method`` matches or beats the best published ``metric`` on at least ``min_cells`` of ``datasets``, its
    runs rounded to the ``decimals`` the published tables print. A cell is met by better only, a tie is "not
    shown" (one-sample interval of the runs against the published number); the claim counts the met cells."""

    method: str
    metric: str
    min_cells: int
    datasets: tuple[str, ...]
    decimals: int = 3
    label: str = ""

    def verdicts(self, table: ResultTable) -> list[Verdict]:
        higher = self.metric in table.higher
        cells = []
        for ds in self.datasets:
            best, values = table.best_published(ds, self.metric), table.values(self.method, ds, self.metric)
            if best is None or not values:
                continue
            c = t_comparison(gain(round(v, self.decimals), best, higher) for v in values.values())
            target = f"{self.method} {self.metric} {_sign(table, self.metric)} best published"
            ours = f"{_cell(table, self.method, ds, self.metric)} vs {fmt_number(best)}"
            cells.append(Verdict(target, ds, ours, claim_met(c, NOT_WORSE), c))
        met = sum(v.met is True for v in cells)
        missed = [v.where for v in cells if v.met is False]
        open_ = len(self.datasets) - met - len(missed)
        target = (
            f"{self.method} {self.metric} {_sign(table, self.metric)} best published on ≥ {self.min_cells} of "
            f"{len(self.datasets)} cells"
        )
        ours = f"{met} of {len(self.datasets)} met" + (f"; missed: {', '.join(missed)}" if missed else "")
        ours += f"; {open_} not judged (n too small or not run)" if open_ else ""
        summary = Verdict(
            target,
            self.label or "cells",
            ours,
            _share_met(met, open_, self.min_cells),
            None,
            _counts(cells),
        )
        return [summary, *cells]


@dataclass(frozen=True)
class AtLeast:
    """``method`` reaches ``value`` on ``dataset`` (``≥`` for higher-is-better metrics, else ``≤``): met when its
    runs clear the bar beyond their interval (better; a tie is "not shown")."""

    method: str
    dataset: str
    metric: str
    value: float

    def verdicts(self, table: ResultTable) -> list[Verdict]:
        c = compare_to_value(table, self.metric, (self.method, self.dataset), self.value)
        target = f"{self.method} {self.metric} {_sign(table, self.metric)} {self.value:g}"
        return [
            Verdict(
                target, self.dataset, _cell(table, self.method, self.dataset, self.metric), claim_met(c, NOT_WORSE), c
            )
        ]


@dataclass(frozen=True)
class BeatsOnAverage:
    """``method``'s ``metric`` over the datasets every one of ``others`` has too (or ``datasets``) is better than
    each other's: one row per other, paired over every (dataset, seed, fold) both ran, Holm-corrected over the
    others; met by better only."""

    method: str
    others: tuple[str, ...]
    metric: str
    datasets: tuple[str, ...] = ()

    def verdicts(self, table: ResultTable) -> list[Verdict]:
        names = (self.method, *self.others)
        pool = self.datasets or tuple(table.datasets)
        common = [d for d in pool if all(not math.isnan(table.mean(m, d, self.metric)) for m in names)]
        sign = _sign(table, self.metric, strict=True)
        if not common:
            target = f"{self.method} {sign} {', '.join(self.others)} on average"
            return [Verdict(target, self.metric, "no common cells yet", None)]
        where = f"{self.metric}, {len(common)} cells" if len(common) > 4 else f"{self.metric}: {', '.join(common)}"
        if len(self.others) > 1:
            where += f" (Holm over {len(self.others)})"
        ours_cells = [(self.method, d) for d in common]
        comparisons = holm(
            [compare_cells(table, self.metric, ours_cells, [(o, d) for d in common]) for o in self.others]
        )
        avg = {m: statistics.fmean(table.mean(m, d, self.metric) for d in common) for m in names}
        out = []
        for other, c in zip(self.others, comparisons):
            ours = f"{self.method} {_fmt(avg[self.method])} vs {other} {_fmt(avg[other])}"
            if len(common) > 1:
                per_cell = [
                    Verdict("", d, "", None, compare_cells(table, self.metric, (self.method, d), (other, d)))
                    for d in common
                ]
                ours += f" (cell by cell: {_counts(per_cell)})"
            out.append(Verdict(f"{self.method} {sign} {other} on average", where, ours, claim_met(c, IMPROVES), c))
        return out


@dataclass(frozen=True)
class WithinOfPublished:
    """``method`` is at most ``within`` (a fraction) worse than its own published ``metric``, per dataset: the
    runs' relative gaps to the published number plus ``within``, one-sample; met by better (a tie is "not shown")."""

    method: str
    metric: str
    within: float

    def verdicts(self, table: ResultTable) -> list[Verdict]:
        higher = self.metric in table.higher
        out = []
        for ds in table.datasets:
            published = table.published(self.method, ds, self.metric)
            values = table.values(self.method, ds, self.metric)
            if published is None or published == 0 or not values:
                continue  # a relative gap to 0 means nothing
            gaps = [(v - published) / abs(published) for v in values.values()]  # signed: > 0 is above published
            c = t_comparison(gain(g, -self.within if higher else self.within, higher) for g in gaps)
            ours = f"{_cell(table, self.method, ds, self.metric)} vs {_fmt(published)} ({statistics.fmean(gaps):+.0%})"
            target = f"{self.method} {self.metric} within {self.within:.0%} of published"
            out.append(Verdict(target, ds, ours, claim_met(c, NOT_WORSE), c, percent=True))
        return out


@dataclass(frozen=True)
class NotWorse:
    """``method``'s ``metric`` is at least as good as ``baseline``'s, per dataset both have run, paired by (seed,
    fold); met by better (a tie is "not shown")."""

    method: str
    baseline: str
    metric: str

    def verdicts(self, table: ResultTable) -> list[Verdict]:
        out = []
        for ds in table.datasets:
            if not table.count(self.method, ds, self.metric) or not table.count(self.baseline, ds, self.metric):
                continue
            c = compare_cells(table, self.metric, (self.method, ds), (self.baseline, ds))
            target = f"{self.method} {_sign(table, self.metric)} {self.baseline}"
            ours = f"{_cell(table, self.method, ds, self.metric)} vs {_cell(table, self.baseline, ds, self.metric)}"
            out.append(Verdict(target, ds, ours, claim_met(c, NOT_WORSE), c))
        return out


@dataclass(frozen=True)
class WithinOfCell:
    """``method``'s ``metric`` on ``dataset`` falls short of ``baseline``'s on ``baseline_dataset`` by at most
    ``margin`` (absolute, in the metric's units and direction): one cell against a cell of another row, e.g. a
    unified multi-task model's score on one task against that task's own single-task model. Paired by (seed,
    fold); met by better (a tie is "not shown")."""

    method: str
    dataset: str
    baseline: str
    baseline_dataset: str
    metric: str
    margin: float = 0.0

    def verdicts(self, table: ResultTable) -> list[Verdict]:
        higher = self.metric in table.higher
        slack = f" {'−' if higher else '+'} {self.margin:g}" if self.margin else ""
        target = (
            f"{self.method} {self.metric} {_sign(table, self.metric)} {self.baseline} ({self.baseline_dataset}){slack}"
        )
        ours, base = (self.method, self.dataset), (self.baseline, self.baseline_dataset)
        if not table.count(*ours, self.metric) or not table.count(*base, self.metric):
            return [Verdict(target, self.dataset, "cells without runs yet", None)]
        c = compare_cells(table, self.metric, ours, base, margin=-self.margin)
        shown = f"{_cell(table, *ours, self.metric)} vs {_cell(table, *base, self.metric)}"
        return [Verdict(target, self.dataset, shown, claim_met(c, NOT_WORSE), c)]


@dataclass(frozen=True)
class BeatsBy:
    """``method``'s ``metric`` beats each of ``baselines`` by at least ``margin``, per dataset where the method
    and a baseline have runs: one row per (dataset, baseline), paired by (seed, fold), Holm-corrected over the
    dataset's baselines (the claim "beats the best of them" is met when every row is).

    ``margin`` is absolute, in the metric's units and direction: higher-is-better means ours ≥ theirs + margin,
    lower-is-better ours ≤ theirs − margin; the gain tested is the difference less the margin. With ``ratio``
    instead: ours ≥ ratio × theirs (higher-is-better) or ours ≤ theirs / ratio (lower-is-better), tested as
    ours − ratio × theirs; a ratio means nothing against a negative value, so such a cell is shown but not judged.
    A positive margin or a ratio claims an improvement (met by better only); ``margin`` ≤ 0 claims "not worse than
    theirs, less |margin|" (better or tie). ``label`` replaces the generated target text.
    """

    method: str
    baselines: tuple[str, ...]
    metric: str
    margin: float = 0.0
    ratio: float | None = None
    label: str = ""

    def __post_init__(self):
        if self.ratio is not None and (self.ratio <= 0 or self.margin):
            raise ConfigError(f"BeatsBy({self.method!r}): give a positive ratio or a margin, not both")

    def _need(self, higher: bool, baseline: str) -> str:
        if self.ratio is not None:
            return f"{self.ratio:g}× {baseline}" if higher else f"{baseline} / {self.ratio:g}"
        plus = (self.margin > 0) == higher
        return baseline + (f" {'+' if plus else '−'} {abs(self.margin):g}" if self.margin else "")

    def verdicts(self, table: ResultTable) -> list[Verdict]:
        higher = self.metric in table.higher
        meets = IMPROVES if self.ratio is not None or self.margin > 0 else NOT_WORSE
        out = []
        for ds in table.datasets:
            ran = [b for b in self.baselines if table.count(b, ds, self.metric)]
            if not table.count(self.method, ds, self.metric) or not ran:
                continue
            comparisons = holm(
                [compare_cells(table, self.metric, (self.method, ds), (b, ds), self.margin, self.ratio) for b in ran]
            )
            for b, c in zip(ran, comparisons):
                target = f"{self.method} {self.metric} {_sign(table, self.metric)} {self._need(higher, b)}"
                if self.label:
                    target = self.label + (f" (vs {b})" if len(self.baselines) > 1 else "")
                where = ds + (f" (Holm over {len(ran)})" if len(ran) > 1 else "")
                shown = f"{_cell(table, self.method, ds, self.metric)} vs {b} {_cell(table, b, ds, self.metric)}"
                if self.ratio is not None and any(v < 0 for v in table.values(b, ds, self.metric).values()):
                    out.append(Verdict(target, where, shown + "; ratio undefined (a value < 0)", None))
                    continue
                out.append(Verdict(target, where, shown, claim_met(c, meets), c))
        if not out:
            target = self.label or f"{self.method} {self.metric} {_sign(table, self.metric)} " + self._need(
                higher, self.baselines[0] if len(self.baselines) == 1 else f"each of {', '.join(self.baselines)}"
            )
            return [Verdict(target, self.metric, "no cells with runs yet", None)]
        return out


@dataclass(frozen=True)
class ImprovesOnFraction:
    """Each ``(method, baseline)`` pair is a cell group (e.g. an aggregator with and without MAMMOTH); on at least
    ``fraction`` of the (pair, dataset) cells, the method is better, paired by (seed, fold). One row per cell and a
    row for the share (a single cell: one row). Not Holm-corrected: the claim is a share of cells, and each cell's
    own 95 % interval keeps its false "better" at ≤ 2.5 %, which moves a share by as little; Holm would make each
    cell's test stricter the more cells a task declares."""

    pairs: tuple[tuple[str, str], ...]
    metric: str
    fraction: float
    label: str = ""

    def verdicts(self, table: ResultTable) -> list[Verdict]:
        cells = []
        for ds in table.datasets:
            for method, baseline in self.pairs:
                if not (set(table.values(method, ds, self.metric)) & set(table.values(baseline, ds, self.metric))):
                    continue
                c = compare_cells(table, self.metric, (method, ds), (baseline, ds))
                shown = f"{_cell(table, method, ds, self.metric)} vs {_cell(table, baseline, ds, self.metric)}"
                cells.append(Verdict(f"{method} {_sign(table, self.metric, True)} {baseline}", ds, shown,
                                     claim_met(c, IMPROVES), c))  # fmt: skip
        target = self.label or f"improves {self.metric} on ≥ {self.fraction:.0%} of cells"
        if not cells:
            return [Verdict(target, self.metric, "no paired cells yet", None)]
        won = sum(v.met is True for v in cells)
        open_ = sum(v.met is None for v in cells)
        met = _share_met(won, open_, self.fraction * len(cells))
        if len(cells) == 1:
            (cell,) = cells
            return [Verdict(target, f"{self.metric}: {cell.where}", cell.ours, met, cell.comparison)]
        ours = f"{won} of {len(cells)} cells better ({won / len(cells):.0%})"
        return [Verdict(target, self.metric, ours, met, None, _counts(cells)), *cells]


def targets_section(targets, table: ResultTable) -> list[str]:
    """Markdown lines of the Targets table (empty without targets)."""
    rows = [v for t in targets for v in t.verdicts(table)]
    if not rows:
        return []
    return ["## Targets", "", *TARGETS_INTRO, "", *verdict_table(rows), ""]


TARGETS_INTRO = (
    "Declared in the task's spec and judged on the records above. Δ is the gain of the claim's method over the claim's "
    "bar in the metric's direction (positive = better: ours − theirs for higher-is-better metrics, theirs − ours "
    "for lower-is-better ones; less the margin, or ours − ratio × theirs, where the claim states one), its mean over "
    "n pairs of runs matched by (seed, fold) — or over n runs against a published or required number — with a 95 % "
    "Student-t interval ([low, high]; at the stated level where a row compares one method with several and the "
    "intervals are Holm-corrected). Outcome: **better ✓** / **worse ✗** when the interval excludes 0, **tie =** "
    'when it holds 0, **n too small** below 3 pairs. A claim of improvement (>, <, "by", "×", "improves") '
    'is met by better only, and so is a claim of reaching a bar or not being worse (≥, ≤, "within"): its Δ is '
    "taken against the bar, so better means the interval clears it. A tie is neither met nor missed: the claim "
    'column says "not shown (tie)". A comparison whose paired runs come from different CPU kinds says so in its '
    "outcome: their last digits may differ through the CPU's kernels alone.",
)


def verdict_table(rows: list[Verdict]) -> list[str]:
    """The Targets table's markdown rows: target, where, ours, n, Δ [95 % CI], outcome, claim."""
    claim = {True: "met", False: "not met", None: "not yet judged"}
    tie = "not shown (tie)"  # neither met nor missed: the interval holds the bar
    lines = ["| target | where | ours | n | Δ [95 % CI] | outcome | claim |", "|---|---|---|---|---|---|---|"]
    for v in rows:
        c = v.comparison
        n, delta = (str(c.n), c.delta(v.percent)) if c is not None else ("—", "—")
        outcome = c.verdict if c is not None else (v.outcome or "—")
        said = tie if c is not None and c.outcome == TIE else claim[v.met]
        lines.append(f"| {v.target} | {v.where} | {v.ours} | {n} | {delta} | {outcome} | {said} |")
    return lines
