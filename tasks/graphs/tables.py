"""C2GMoE's own page section (declared in ``spec.TABLES``): C2GMoE against GMoE on the diagnostics, by the pages' rule.

The diagnostics table, the plots and the accuracy targets are declarations in ``spec.py``; prose lives in
``leaderboard/notes/c2gmoe.md``.
"""

from __future__ import annotations

from collections import defaultdict

from zoo.leaderboard.compare import BETTER, TIE, TOO_FEW, WORSE, paired
from zoo.leaderboard.numbers import finite_mean, fmt_value

CLAIMS = (("homogeneity", "lower", "expert homogeneity"), ("load_entropy", "higher", "load entropy (flatter load)"))


def versus_gmoe(page) -> list[str]:
    """Issue 5's diagnostic claim (lower expert homogeneity, flatter load than GMoE), per dataset: informational
    lines, not a judged target (the diagnostics are this implementation's reading of the paper's). Each dataset is
    compared by the leaderboard's rule (``zoo.leaderboard.compare``: paired by (seed, fold), 95 % t-interval)."""
    keyed = defaultdict(dict)  # (dataset, method, diagnostic) -> (seed, fold) -> value
    values = defaultdict(list)  # (dataset, method, diagnostic) -> every run's value
    for r in page.records:
        d = (r.extra or {}).get("diagnostics") or {}
        for key, _, _ in CLAIMS:
            if d.get(key) is not None:
                keyed[(r.dataset, r.method, key)][(r.seed, r.fold)] = float(d[key])
                values[(r.dataset, r.method, key)].append(float(d[key]))
    datasets = sorted({d for (d, _, _) in keyed})
    out = []
    for key, better, label in CLAIMS:
        pairs = [
            (d, finite_mean(values[(d, "c2gmoe", key)]), finite_mean(values[(d, "gmoe", key)]))
            for d in datasets
            if values.get((d, "c2gmoe", key)) and values.get((d, "gmoe", key))
        ]
        if not pairs:
            continue
        outcomes = {
            d: paired(keyed[(d, "c2gmoe", key)], keyed[(d, "gmoe", key)], higher=better == "higher").outcome
            for d, _, _ in pairs
        }
        found = list(outcomes.values())
        counts = ", ".join(f"{o} on {found.count(o)}" for o in (BETTER, TIE, WORSE, TOO_FEW) if o in found)
        detail = "; ".join(f"{d}: {fmt_value(c)} vs {fmt_value(g)}, {outcomes[d]}" for d, c, g in pairs)
        out.append(f"- {label} {better} than GMoE: {counts} of {len(pairs)} datasets ({detail})")
    if not out:
        return []
    intro = "Per dataset, paired by (seed, fold), 95 % t-interval (`zoo.leaderboard.compare`, the pages' one rule):"
    return ["## C2GMoE vs GMoE on the diagnostics (issue 5)", "", intro, "", *out]
