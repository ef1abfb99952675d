"""MoE-GS's own page sections (declared in ``spec.TABLES``): the gate-aware pruning curve, from the records, and
the rasteriser claim. The distillation table and the example renders and expert-weight maps (copied from the
``moe_gs`` run into ``plots/`` by hand, ``zoo.leaderboard.example_plots``) are declarations of the spec.

Everything else (metrics, targets, routing summary) is drawn by the generic renderer from the spec. The rasteriser
speed claim is judged on the newest ``zoo bench splat --leaderboard`` record (``zoo.bench.claims``).
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from zoo.bench.claims import claim, claims_table, newest, no_record, provenance_line
from zoo.leaderboard.numbers import finite_mean, fmt_value

# The issue's rasteriser target: the tile rasteriser at least 5x faster than the dense reference at 200 px / 20000
# Gaussians (forward + backward of one render).
SPEEDUP = 5.0
ISSUE_CELL = (200, 20000)


def pruning(page) -> list[str]:
    """Blend test PSNR by the fraction of Gaussians each expert keeps (``moe_gs`` rows,
    ``extra.pruning_psnr_by_kept_fraction``; 100 % is the row's ``test/psnr``)."""
    curve, full = defaultdict(list), []
    for r in page.records:
        if r.method == "moe_gs" and "test/psnr" in r.metrics:
            full.append(r.metrics["test/psnr"])
            for fraction, psnr in ((r.extra or {}).get("pruning_psnr_by_kept_fraction") or {}).items():
                curve[float(fraction)].append(psnr)
    if not curve:
        return []
    kept = sorted(curve, reverse=True)
    lines = ["## Gate-aware pruning: test PSNR of the blend by the Gaussians each expert keeps", ""]
    lines += ["| kept | 100 % | " + " | ".join(f"{f * 100:g} %" for f in kept) + " |", "|---" * (len(kept) + 2) + "|"]
    cells = [fmt_value(finite_mean(full), 2), *(fmt_value(finite_mean(curve[f]), 2) for f in kept)]
    return [*lines, "| test/psnr (dB) | " + " | ".join(cells) + " |"]


def rasteriser(page) -> list[str]:
    """The rasteriser claim, judged on the benchmark records of the page's leaderboard (``rasteriser_lines``)."""
    return rasteriser_lines(page.leaderboard)


def _raster(record: dict) -> bool:
    """A ``zoo bench splat`` record that timed the tile rasteriser against the dense reference."""
    methods = set(record.get("methods", []))
    return record.get("mode") == "raster" and {"tiles", "dense"} <= methods and bool(record.get("measurements"))


def _cells(record: dict) -> set[tuple[int, int]]:
    return {(c["size"], c["gaussians"]) for c in record.get("cells", [])}


def _speedup_gains(record: dict, cell: tuple[int, int]) -> list[float]:
    """Per repeat (tiles and dense measured side by side): dense seconds / tiles seconds - ``SPEEDUP``."""
    by_repeat: dict[int, dict] = defaultdict(dict)
    for m in record["measurements"]:
        if (m["size"], m["gaussians"]) == cell:
            by_repeat[m["repeat"]][m["method"]] = m["seconds"]
    return [t["dense"] / t["tiles"] - SPEEDUP for _, t in sorted(by_repeat.items()) if {"tiles", "dense"} <= set(t)]


def rasteriser_lines(leaderboard: Path | None = None) -> list[str]:
    """The rasteriser claim per cell of the newest ``zoo bench splat`` record that holds the issue's cell (else the
    newest that compared the two rasterisers, the issue's cell then "no benchmark record"), its medians and its
    provenance."""
    target = f"tile rasteriser ≥ {SPEEDUP:g}× faster than the dense reference"
    lines = ["## Rasteriser speed (`zoo bench splat`)", ""]
    found = newest("splat", lambda r: _raster(r) and ISSUE_CELL in _cells(r), leaderboard)
    found = found or newest("splat", _raster, leaderboard)
    issue_where = f"{ISSUE_CELL[0]} px, {ISSUE_CELL[1]} Gaussians (the issue's cell)"
    if found is None:
        return [*lines, *claims_table([no_record(target, issue_where)]), ""]
    path, record = found
    lines += ["| px | Gaussians | tiles s | tiles MB | dense s | dense MB | speed-up |", "|---" * 7 + "|"]
    verdicts = []
    for c in record["cells"]:
        cell = (c["size"], c["gaussians"])
        lines.append(
            f"| {cell[0]} | {cell[1]} | {c['tiles_s']:.3f} | {c['tiles_peak_mb']:.0f} | {c['dense_s']:.1f} | "
            f"{c['dense_peak_mb']:.0f} | {c['speedup_vs_dense']:.1f}× |"
        )
        where = f"{cell[0]} px, {cell[1]} Gaussians" + (" (the issue's cell)" if cell == ISSUE_CELL else "")
        ours = f"{c['speedup_vs_dense']:.1f}× (medians)"
        verdicts.append(claim(target, where, ours, _speedup_gains(record, cell)))
    if ISSUE_CELL not in _cells(record):
        verdicts.append(no_record(target, issue_where))
    lines += [
        "",
        "Random scenes, a few pixels per Gaussian; forward + backward of one render, each measurement in its own "
        "process after a warm-up render of a tiny scene; medians over the record's repeats; MB = rise of the peak "
        "RSS with freed blocks of 1 MiB or more returned to the system. Δ = speed-up − "
        f"{SPEEDUP:g}×, per repeat.",
        "",
    ]
    return [*lines, *claims_table(verdicts), "", provenance_line(path, record, leaderboard), ""]
