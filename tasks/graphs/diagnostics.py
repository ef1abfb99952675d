"""The C²GMoE paper's graph-MoE diagnostics: expert homogeneity, load distribution, routing entropy vs correctness.

* **Expert homogeneity**: cosine similarity between the outputs of experts e and f on the same item, averaged
  over items -> (E, E) matrix; homogeneity is its mean off-diagonal entry (1 = all experts say the same thing).
* **Load distribution** (router collapse) and mean routing entropy: ``zoo.moe.routing_summary`` (the numbers
  every task reports): fraction of top-k slots per expert, normalised load entropy (1 = flat), max/mean load,
  dead experts, mean normalised router entropy.
* **Routing uncertainty vs errors** (task-specific): per-item entropy of the router probabilities / log E, split
  by whether the final prediction was correct; the point-biserial (Pearson) correlation between entropy and
  correctness (the paper reports a negative one).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from zoo.moe import Routing, RoutingSummary


def expert_similarity(expert_outputs: Tensor) -> Tensor:
    """(T, E, D) expert outputs -> (E, E) item-averaged pairwise cosine similarity."""
    T, E = expert_outputs.shape[:2]
    z = F.normalize(expert_outputs.float(), dim=-1).transpose(0, 1).reshape(E, -1)  # (E, T * D)
    return z @ z.t() / max(T, 1)


def homogeneity(similarity: Tensor) -> float:
    """Mean off-diagonal entry of an (E, E) similarity matrix (0 when E == 1)."""
    E = similarity.shape[0]
    if E < 2:
        return 0.0
    off = ~torch.eye(E, dtype=torch.bool, device=similarity.device)
    return float(similarity[off].mean())


def routing_entropy(probs: Tensor) -> Tensor:
    """(T, E) router probabilities -> (T,) entropy / log E in [0, 1]."""
    E = probs.shape[-1]
    ent = -(probs * probs.clamp_min(1e-12).log()).sum(-1)
    return ent / (math.log(E) if E > 1 else 1.0)


def point_biserial(values: np.ndarray, binary: np.ndarray) -> float:
    """Pearson correlation between a continuous and a 0/1 variable; NaN when either is constant."""
    if values.size < 2 or values.std() == 0 or binary.std() == 0:
        return float("nan")
    return float(np.corrcoef(values, binary.astype(float))[0, 1])


class DiagnosticsAccumulator:
    """Collects one mixture's routing and expert outputs over test batches and summarises them.

    ``update(routing, correct, expert_outputs, item_batch)``: only the routing's real tokens
    (``routing.token_mask()``, e.g. the test nodes) count. ``correct`` (T,) bool per predicted item; when the
    router routes nodes while predictions are per graph (GMoE on graph classification), ``item_batch`` (N,) maps
    each routed node to its graph so the node inherits the graph's correctness. ``expert_outputs`` (T, E, D).
    """

    LAYER = "diagnosed"

    def __init__(self) -> None:
        self.entropy: list[Tensor] = []
        self.correct: list[Tensor] = []
        self.summary = RoutingSummary()
        self.sim_sum: Tensor | None = None
        self.sim_items = 0

    def update(
        self,
        routing: Routing,
        correct: Tensor,
        expert_outputs: Tensor | None = None,
        item_batch: Tensor | None = None,
    ) -> None:
        routed_correct = correct if item_batch is None else correct[item_batch]
        if routed_correct.shape[0] != routing.num_tokens:
            raise ValueError(f"{routing.num_tokens} routed items but {routed_correct.shape[0]} correctness flags")
        real = routing.token_mask()
        self.summary.add({self.LAYER: routing})
        self.entropy.append(routing_entropy(routing.router_probs().detach()[real]).cpu())
        self.correct.append(routed_correct[real].detach().cpu())
        if expert_outputs is not None:
            outs = expert_outputs.detach()[real]
            sim = expert_similarity(outs).cpu() * outs.shape[0]
            self.sim_sum = sim if self.sim_sum is None else self.sim_sum + sim
            self.sim_items += outs.shape[0]

    def __bool__(self) -> bool:
        return bool(self.entropy)

    def compute(self) -> dict:
        """JSON-serialisable summary (empty when nothing was routed, i.e. dense models)."""
        if not self:
            return {}
        entropy = torch.cat(self.entropy).numpy()
        correct = torch.cat(self.correct).numpy().astype(bool)
        layer = self.summary.layers[self.LAYER]
        result = {
            "num_experts": layer.num_experts,
            "load": [round(float(v), 6) for v in layer.load],
            "load_entropy": layer.load_entropy,
            "max_over_mean_load": layer.max_over_mean_load,
            "dead_experts": layer.dead_experts,
            "routing_entropy": layer.entropy,
            "routing_entropy_correct": float(entropy[correct].mean()) if correct.any() else float("nan"),
            "routing_entropy_incorrect": float(entropy[~correct].mean()) if (~correct).any() else float("nan"),
            "entropy_correctness_corr": point_biserial(entropy, correct),
        }
        if self.sim_sum is not None:
            sim = self.sim_sum / max(self.sim_items, 1)
            result["similarity"] = [[round(float(v), 6) for v in row] for row in sim]
            result["homogeneity"] = homogeneity(sim)
        return result

    def plot(self, folder: str | Path, title: str = "") -> dict[str, str]:
        """Save the entropy histogram (correct vs incorrect), the similarity matrix and the load as PNGs."""
        if not self:
            return {}
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        summary = self.compute()
        entropy = torch.cat(self.entropy).numpy()
        correct = torch.cat(self.correct).numpy().astype(bool)
        paths = {}

        fig, ax = plt.subplots(figsize=(4.5, 3.2))
        bins = np.linspace(0.0, 1.0, 26)
        ax.hist(entropy[correct], bins=bins, alpha=0.6, label=f"correct (n={int(correct.sum())})", density=True)
        ax.hist(entropy[~correct], bins=bins, alpha=0.6, label=f"incorrect (n={int((~correct).sum())})", density=True)
        ax.set_xlabel("routing entropy / log E")
        ax.set_ylabel("density")
        ax.set_title(f"{title} corr={summary['entropy_correctness_corr']:.3f}", fontsize=9)
        ax.legend(fontsize=8)
        paths["entropy_hist"] = self._save(fig, folder / "routing_entropy_hist.png")

        if "similarity" in summary:
            fig, ax = plt.subplots(figsize=(3.8, 3.2))
            im = ax.imshow(np.array(summary["similarity"]), vmin=-1, vmax=1, cmap="coolwarm")
            fig.colorbar(im, ax=ax)
            ax.set_xlabel("expert")
            ax.set_ylabel("expert")
            ax.set_title(f"{title} homogeneity={summary['homogeneity']:.3f}", fontsize=9)
            paths["similarity"] = self._save(fig, folder / "expert_similarity.png")

        fig, ax = plt.subplots(figsize=(3.8, 3.0))
        ax.bar(range(summary["num_experts"]), summary["load"])
        ax.axhline(1.0 / summary["num_experts"], color="k", ls="--", lw=0.8)
        ax.set_xlabel("expert")
        ax.set_ylabel("fraction of top-k slots")
        ax.set_title(f"{title} load entropy={summary['load_entropy']:.3f}", fontsize=9)
        paths["load"] = self._save(fig, folder / "expert_load.png")
        return paths

    @staticmethod
    def _save(fig, path: Path) -> str:
        import matplotlib.pyplot as plt

        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)
        return str(path)
