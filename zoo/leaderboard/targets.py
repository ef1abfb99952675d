"""Claims and targets a task declares as data (``TaskSpec.targets``), judged on its records by one renderer.

Each target turns a `ResultTable` into `Verdict` rows: what was claimed, where, what we measured, and whether it
is met (``None`` when the cells it needs have no runs yet). Means are over a cell's seeds / folds; "better"
follows the metric's direction (``TaskSpec.higher_is_better``).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from zoo.errors import ConfigError
from zoo.leaderboard.numbers import fmt_number
from zoo.leaderboard.results_table import ResultTable


@dataclass(frozen=True)
class Verdict:
    """One line of a page's Targets table."""

    target: str
    where: str
    ours: str
    met: bool | None


def _fmt(value: float) -> str:
    return "—" if math.isnan(value) else fmt_number(value)


def _reaches(table: ResultTable, metric: str, ours: float, required: float) -> bool:
    """``ours`` is at ``required`` (to float rounding) or better in ``metric``'s direction."""
    return math.isclose(ours, required, rel_tol=1e-9) or not table.better(metric, required, ours)


def _sign(table: ResultTable, metric: str, strict: bool = False) -> str:
    if metric in table.higher:
        return ">" if strict else "≥"
    return "<" if strict else "≤"


@dataclass(frozen=True)
class BeatsBestPublished:
    """``method`` matches or beats the best published ``metric`` on at least ``min_cells`` of ``datasets``,
    compared at the ``decimals`` the published tables print (a tie meets it)."""

    method: str
    metric: str
    min_cells: int
    datasets: tuple[str, ...]
    decimals: int = 3
    label: str = ""

    def verdicts(self, table: ResultTable) -> list[Verdict]:
        met, missed, tried = 0, [], 0
        for ds in self.datasets:
            ours, best = table.mean(self.method, ds, self.metric), table.best_published(ds, self.metric)
            if math.isnan(ours) or best is None:
                continue
            tried += 1
            ok = not table.better(self.metric, best, round(ours, self.decimals))
            met += ok
            if not ok:
                missed.append(ds)
        target = (
            f"{self.method} {self.metric} {_sign(table, self.metric)} best published on ≥ {self.min_cells} of "
            f"{len(self.datasets)} cells"
        )
        ours = f"{met} of {tried} run (of {len(self.datasets)})" + (f"; missed: {', '.join(missed)}" if missed else "")
        still_possible = met + len(self.datasets) - tried >= self.min_cells
        verdict = True if met >= self.min_cells else (None if still_possible else False)
        return [Verdict(target, self.label or "cells", ours, verdict)]


@dataclass(frozen=True)
class AtLeast:
    """``method`` reaches ``value`` on ``dataset`` (``≥`` for higher-is-better metrics, else ``≤``)."""

    method: str
    dataset: str
    metric: str
    value: float

    def verdicts(self, table: ResultTable) -> list[Verdict]:
        ours = table.mean(self.method, self.dataset, self.metric)
        n = table.count(self.method, self.dataset, self.metric)
        met = None if math.isnan(ours) else not table.better(self.metric, self.value, ours)
        target = f"{self.method} {self.metric} {_sign(table, self.metric)} {self.value:g}"
        return [Verdict(target, self.dataset, f"{_fmt(ours)} (n={n})", met)]


@dataclass(frozen=True)
class BeatsOnAverage:
    """``method``'s ``metric``, averaged over the datasets every one of ``others`` has too (or ``datasets``), is
    better than each of theirs."""

    method: str
    others: tuple[str, ...]
    metric: str
    datasets: tuple[str, ...] = ()

    def verdicts(self, table: ResultTable) -> list[Verdict]:
        names = (self.method, *self.others)
        pool = self.datasets or tuple(table.datasets)
        common = [d for d in pool if all(not math.isnan(table.mean(m, d, self.metric)) for m in names)]
        target = f"{self.method} {_sign(table, self.metric, strict=True)} {', '.join(self.others)} on average"
        if not common:
            return [Verdict(target, self.metric, "no common cells yet", None)]
        avg = {m: statistics.fmean(table.mean(m, d, self.metric) for d in common) for m in names}
        ok = all(table.better(self.metric, avg[self.method], avg[o]) for o in self.others)
        cells = {
            o: sum(
                table.better(self.metric, table.mean(self.method, d, self.metric), table.mean(o, d, self.metric))
                for d in common
            )
            for o in self.others
        }
        ours = "; ".join(
            [
                f"{self.method} {_fmt(avg[self.method])}",
                *(f"{o} {_fmt(avg[o])} (better on {cells[o]} of {len(common)} cells)" for o in self.others),
            ]
        )
        where = f"{self.metric}, {len(common)} cells" if len(common) > 4 else f"{self.metric}: {', '.join(common)}"
        return [Verdict(target, where, ours, ok)]


@dataclass(frozen=True)
class WithinOfPublished:
    """``method`` is at most ``within`` (a fraction) worse than its own published ``metric``, per dataset."""

    method: str
    metric: str
    within: float

    def verdicts(self, table: ResultTable) -> list[Verdict]:
        out = []
        for ds in table.datasets:
            published = table.published(self.method, ds, self.metric)
            ours = table.mean(self.method, ds, self.metric)
            if published is None or published == 0 or math.isnan(ours):
                continue  # a relative gap to 0 means nothing
            gap = (ours - published) / abs(published)  # signed: > 0 is above the published value
            ok = gap >= -self.within if self.metric in table.higher else gap <= self.within
            n = table.count(self.method, ds, self.metric)
            target = f"{self.method} {self.metric} within {self.within:.0%} of published"
            out.append(Verdict(target, ds, f"{_fmt(ours)} (n={n}) vs {_fmt(published)} ({gap:+.0%})", ok))
        return out


@dataclass(frozen=True)
class NotWorse:
    """``method``'s mean ``metric`` is at least as good as ``baseline``'s, per dataset both have run."""

    method: str
    baseline: str
    metric: str

    def verdicts(self, table: ResultTable) -> list[Verdict]:
        out = []
        for ds in table.datasets:
            ours, base = table.mean(self.method, ds, self.metric), table.mean(self.baseline, ds, self.metric)
            if math.isnan(ours) or math.isnan(base):
                continue
            n, nb = table.count(self.method, ds, self.metric), table.count(self.baseline, ds, self.metric)
            ok = not table.better(self.metric, base, ours)
            target = f"{self.method} {_sign(table, self.metric)} {self.baseline}"
            out.append(Verdict(target, ds, f"{_fmt(ours)} (n={n}) vs {_fmt(base)} (n={nb})", ok))
        return out


@dataclass(frozen=True)
class WithinOfCell:
    """``method``'s mean ``metric`` on ``dataset`` falls short of ``baseline``'s on ``baseline_dataset`` by at most
    ``margin`` (absolute, in the metric's units and direction): one cell against a cell of another row, e.g. a
    unified multi-task model's score on one task against that task's own single-task model."""

    method: str
    dataset: str
    baseline: str
    baseline_dataset: str
    metric: str
    margin: float = 0.0

    def verdicts(self, table: ResultTable) -> list[Verdict]:
        higher = self.metric in table.higher
        ours = table.mean(self.method, self.dataset, self.metric)
        base = table.mean(self.baseline, self.baseline_dataset, self.metric)
        slack = f" {'−' if higher else '+'} {self.margin:g}" if self.margin else ""
        target = (
            f"{self.method} {self.metric} {_sign(table, self.metric)} {self.baseline} ({self.baseline_dataset}){slack}"
        )
        if math.isnan(ours) or math.isnan(base):
            return [Verdict(target, self.dataset, "cells without runs yet", None)]
        met = _reaches(table, self.metric, ours, base - self.margin if higher else base + self.margin)
        n, nb = (
            table.count(self.method, self.dataset, self.metric),
            table.count(self.baseline, self.baseline_dataset, self.metric),
        )
        return [Verdict(target, self.dataset, f"{_fmt(ours)} (n={n}) vs {_fmt(base)} (n={nb})", met)]


@dataclass(frozen=True)
class BeatsBy:
    """``method``'s mean ``metric`` beats the best of ``baselines``' means by at least ``margin``, per dataset where
    the method and at least one baseline have runs (the best among those that have).

    ``margin`` is absolute, in the metric's units and direction: higher-is-better means ours ≥ best + margin,
    lower-is-better ours ≤ best − margin (``margin=0``: not worse than the best; a negative margin lets it fall
    short by that much). With ``ratio`` instead: ours ≥ ratio × best (higher-is-better) or ours ≤ best / ratio
    (lower-is-better); against a best of 0 only a strict gain meets it (0 vs 0 misses), and a ratio means nothing
    against a negative best, so such a cell is shown but not judged. Reaching the required value (to float
    rounding) meets it. ``label`` replaces the generated target text; ``met`` is None until a dataset can be judged.
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

    def verdicts(self, table: ResultTable) -> list[Verdict]:
        higher = self.metric in table.higher
        of = self.baselines[0] if len(self.baselines) == 1 else f"best of {', '.join(self.baselines)}"
        if self.ratio is not None:
            need = f"{self.ratio:g}× {of}" if higher else f"{of} / {self.ratio:g}"
        else:
            plus = (self.margin > 0) == higher
            need = of + (f" {'+' if plus else '−'} {abs(self.margin):g}" if self.margin else "")
        target = self.label or f"{self.method} {self.metric} {_sign(table, self.metric)} {need}"
        out = []
        for ds in table.datasets:
            ours = table.mean(self.method, ds, self.metric)
            means = {b: table.mean(b, ds, self.metric) for b in self.baselines}
            means = {b: v for b, v in means.items() if not math.isnan(v)}
            if math.isnan(ours) or not means:
                continue
            name = (max if higher else min)(means, key=means.get)
            best = means[name]
            if self.ratio is None:
                gain = ours - best if higher else best - ours
                met = _reaches(table, self.metric, ours, best + self.margin if higher else best - self.margin)
                achieved = f"{'+' if gain >= 0 else ''}{_fmt(gain)} over best"
            elif best > 0:
                met = _reaches(table, self.metric, ours, best * self.ratio if higher else best / self.ratio)
                achieved = f"{ours / best:.2f}× best"
            elif best == 0:  # any ratio of 0 is 0: only a strict gain counts (0 vs 0 shows none)
                met = table.better(self.metric, ours, 0.0)
                achieved = f"best is 0: ours {_sign(table, self.metric, strict=True)} 0 counts"
            else:
                met, achieved = None, "ratio undefined (best < 0)"
            shown = (
                f"{_fmt(ours)} (n={table.count(self.method, ds, self.metric)}); best {name} {_fmt(best)} "
                f"(n={table.count(name, ds, self.metric)}); {achieved}"
            )
            out.append(Verdict(target, ds, shown, met))
        return out or [Verdict(target, self.metric, "no cells with runs yet", None)]


@dataclass(frozen=True)
class ImprovesOnFraction:
    """Each ``(method, baseline)`` pair is a cell group (e.g. an aggregator with and without MAMMOTH); on at least
    ``fraction`` of the (pair, dataset) cells, the method's mean over the (seed, fold) runs both have is better."""

    pairs: tuple[tuple[str, str], ...]
    metric: str
    fraction: float
    label: str = ""

    def verdicts(self, table: ResultTable) -> list[Verdict]:
        won = total = 0
        details = []
        for ds in table.datasets:
            for method, baseline in self.pairs:
                ours, base = table.values(method, ds, self.metric), table.values(baseline, ds, self.metric)
                keys = sorted(set(ours) & set(base))
                if not keys:
                    continue
                total += 1
                deltas = [ours[k] - base[k] for k in keys]
                delta = statistics.fmean(deltas)
                won += table.better(self.metric, delta, 0.0)
                runs_won = sum(table.better(self.metric, d, 0.0) for d in deltas)
                runs = f"better in {runs_won} of {len(keys)} runs"
                details.append(f"{method} vs {baseline} on {ds}: mean Δ {delta:+.4f}, {runs}")
        target = self.label or f"improves {self.metric} on ≥ {self.fraction:.0%} of cells"
        if not total:
            return [Verdict(target, self.metric, "no paired cells yet", None)]
        ours = f"{won} of {total} cells ({won / total:.0%})"
        if len(details) <= 3:  # few cells: show what each verdict rests on
            ours += "; " + "; ".join(details)
        return [Verdict(target, self.metric, ours, won / total >= self.fraction)]


def targets_section(targets, table: ResultTable) -> list[str]:
    """Markdown lines of the Targets table (empty without targets)."""
    rows = [v for t in targets for v in t.verdicts(table)]
    if not rows:
        return []
    mark = {True: "✓", False: "✗", None: "not yet judged"}
    lines = [
        "## Targets",
        "",
        "Declared in the task's spec and judged on the records above (means over seeds / folds).",
        "",
        "| target | where | ours | met |",
        "|---|---|---|---|",
    ]
    lines += [f"| {v.target} | {v.where} | {v.ours} | {mark[v.met]} |" for v in rows]
    return lines + [""]
