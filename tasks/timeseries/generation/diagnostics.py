"""Expert load per domain and per diffusion-timestep band, and how much the choice of expert tells about each.

``ExpertLoad`` counts the routed slots (``Routing.indices`` >= 0, real tokens) of every mixture layer, summed
over layers, by (group, band, expert): a group is an evaluation case (a domain, or an unseen domain at one k),
a band one of ``bands`` equal slices of the diffusion timesteps (band 0 = the least noisy). The specialisation
score is the normalised mutual information ``I(expert; band) / H(band)`` (0: experts ignore the noise level;
1: the expert determines it), and the same for groups.
"""

from __future__ import annotations

import numpy as np
import torch

from zoo.moe import Routing


def _nmi(joint: np.ndarray) -> float:
    """I(X; Y) / H(X) of a (X, Y) count table (0 when X takes one value)."""
    p = joint / max(joint.sum(), 1)
    px, py = p.sum(1, keepdims=True), p.sum(0, keepdims=True)
    nz = p > 0
    mi = float((p[nz] * np.log(p[nz] / (px @ py)[nz])).sum())
    hx = float(-(px[px > 0] * np.log(px[px > 0])).sum())
    return mi / hx if hx > 0 else 0.0


class ExpertLoad:
    """Accumulated (group, band, expert) slot counts; ``add`` one routing step of a batch."""

    def __init__(self, num_experts: int, timesteps: int, bands: int = 4):
        self.num_experts, self.timesteps, self.bands = num_experts, timesteps, bands
        self.counts: dict[str, np.ndarray] = {}

    def band(self, step: int) -> int:
        return min(self.bands - 1, step * self.bands // self.timesteps)

    def add(self, group: str, step: int, routings: dict[str, Routing]) -> None:
        table = self.counts.setdefault(group, np.zeros((self.bands, self.num_experts)))
        for routing in routings.values():
            idx = routing.indices
            if routing.valid is not None:
                idx = idx[routing.valid]
            idx = idx[idx >= 0]
            table[self.band(step)] += torch.bincount(idx, minlength=self.num_experts).cpu().numpy()[: self.num_experts]

    def per_group(self) -> np.ndarray:
        return np.stack([c.sum(0) for c in self.counts.values()]) if self.counts else np.zeros((0, self.num_experts))

    def per_band(self) -> np.ndarray:
        return sum(self.counts.values()) if self.counts else np.zeros((self.bands, self.num_experts))

    def band_labels(self) -> list[str]:
        edges = [b * self.timesteps // self.bands for b in range(self.bands + 1)]
        return [f"t in [{lo}, {hi})" for lo, hi in zip(edges[:-1], edges[1:])]

    def summary(self) -> dict:
        return {
            "groups": list(self.counts),
            "bands": self.band_labels(),
            "load_per_group": self.per_group().tolist(),
            "load_per_band": np.asarray(self.per_band()).tolist(),
            "nmi_expert_band": _nmi(np.asarray(self.per_band())),
            "nmi_expert_group": _nmi(self.per_group()),
        }
