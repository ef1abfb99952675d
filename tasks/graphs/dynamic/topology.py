"""Routing against local topology (DyGMoCE diagnostic): does a node whose recent neighbourhood is clustered
(cyclic, grid-like) get routed to different curvatures than a tree-like one?

For the source node of each positive test pair: the local clustering coefficient of its recent neighbourhood
(the distinct neighbours in its DyGFormer sequence; the fraction of their pairs that interacted before the query
time; 0 for fewer than two neighbours), and its routing's expected curvature, ``Σ_e p_e κ_e`` averaged over the
node's tokens. Summarised as Spearman's ρ over nodes and the mean expected curvature per clustering quartile.
"""

from __future__ import annotations

import numpy as np
from scipy.stats import spearmanr

from zoo_tasks.graphs.dynamic.neighbors import NeighborFinder


def recent_clustering(finder: NeighborFinder, node: int, time: float, sequence_ids: np.ndarray) -> float:
    """Clustering coefficient of ``node``'s recent neighbourhood: distinct non-padding ids of its sequence other
    than itself; a pair (u, v) counts if u and v interacted strictly before ``time``."""
    nbrs = [int(v) for v in np.unique(sequence_ids) if v != 0 and v != node]
    if len(nbrs) < 2:
        return 0.0
    links = 0
    for i, u in enumerate(nbrs):
        seen = set(finder.before(u, time)[0].tolist())
        links += sum(v in seen for v in nbrs[i + 1 :])
    return links / (len(nbrs) * (len(nbrs) - 1) / 2)


def summarise(clustering: list[float], expected: list[float]) -> dict:
    """Spearman's ρ and the mean expected curvature per clustering quartile (JSON-able)."""
    c, e = np.asarray(clustering, dtype=float), np.asarray(expected, dtype=float)
    if len(c) < 4 or np.ptp(c) == 0 or np.ptp(e) == 0:
        return {"n": int(len(c)), "spearman": None}
    edges = np.quantile(c, [0.25, 0.5, 0.75])
    bins = np.searchsorted(edges, c, side="right")
    per_bin = [round(float(e[bins == b].mean()), 5) if (bins == b).any() else None for b in range(4)]
    return {"n": int(len(c)), "spearman": round(float(spearmanr(c, e).statistic), 4),
            "expected_curvature_by_clustering_quartile": per_bin,
            "clustering_quartile_edges": [round(float(x), 4) for x in edges]}  # fmt: skip
