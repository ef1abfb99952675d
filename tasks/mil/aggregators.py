"""MIL aggregators: a padded batch of instance features -> one bag logit (binary MIL), all mask-aware.

Every aggregator maps ``h`` (B, N, D) and ``mask`` (B, N) bool (True = real instance) to ``(logits (B,),
scores (B, N) | None)``, where ``scores`` are per-instance attention weights or instance logits used for
plots. All are invariant to the order of the instances in a bag.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from zoo.errors import ConfigError


def _masked_softmax(scores: Tensor, mask: Tensor) -> Tensor:
    return torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=1)


class MeanPoolMIL(nn.Module):
    """Embedding-level mean pooling (Wang et al., "Revisiting Multiple Instance Neural Networks", Pattern Recognition
    2018, arXiv 1610.02501):
    ``logit = w^T mean_n h_n + c``. (B, N, D), (B, N) -> (B,), None."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.classifier = nn.Linear(dim, 1)

    def forward(self, h: Tensor, mask: Tensor) -> tuple[Tensor, Tensor | None]:
        m = mask[..., None].to(h.dtype)
        pooled = (h * m).sum(1) / m.sum(1).clamp(min=1)
        return self.classifier(pooled).squeeze(-1), None


class MaxPoolMIL(nn.Module):
    """Embedding-level max pooling (Wang et al. 2018, arXiv 1610.02501, MI-Net): ``logit = w^T max_n h_n + c``
    (feature-wise max).
    (B, N, D), (B, N) -> (B,), None."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.classifier = nn.Linear(dim, 1)

    def forward(self, h: Tensor, mask: Tensor) -> tuple[Tensor, Tensor | None]:
        pooled = h.masked_fill(~mask[..., None], float("-inf")).amax(1)
        return self.classifier(pooled).squeeze(-1), None


class AttentionMIL(nn.Module):
    """Attention-based MIL pooling (Ilse, Tomczak & Welling, "Attention-based Deep Multiple Instance Learning",
    ICML 2018, arXiv 1802.04712, Eq. 8): ``a_n = softmax_n(w^T tanh(V h_n))``, ``z = sum_n a_n h_n``,
    ``logit = u^T z + c``.

    With ``gated=True``, Eq. 9: ``a_n = softmax_n(w^T (tanh(V h_n) * sigmoid(U h_n)))``.
    (B, N, D), (B, N) -> logits (B,), attention (B, N).
    """

    def __init__(self, dim: int, hidden: int = 128, gated: bool = False, dropout: float = 0.0) -> None:
        super().__init__()
        self.V = nn.Linear(dim, hidden)
        self.U = nn.Linear(dim, hidden) if gated else None
        self.w = nn.Linear(hidden, 1)
        self.dropout = nn.Dropout(dropout)
        self.classifier = nn.Linear(dim, 1)

    def forward(self, h: Tensor, mask: Tensor) -> tuple[Tensor, Tensor | None]:
        a = torch.tanh(self.V(h))
        if self.U is not None:
            a = a * torch.sigmoid(self.U(h))
        attention = _masked_softmax(self.w(self.dropout(a)).squeeze(-1), mask)
        z = torch.einsum("bn,bnd->bd", attention, h)
        return self.classifier(z).squeeze(-1), attention


class GatedAttentionMIL(AttentionMIL):
    """Gated attention MIL pooling (Ilse et al., ICML 2018, Eq. 9); see :class:`AttentionMIL`."""

    def __init__(self, dim: int, hidden: int = 128, dropout: float = 0.0) -> None:
        super().__init__(dim, hidden, gated=True, dropout=dropout)


class DSMIL(nn.Module):
    """Dual-stream MIL (Li, Li & Eliceiri, "Dual-stream Multiple Instance Learning Network for Whole Slide Image
    Classification with Self-supervised Contrastive Learning", CVPR 2021, arXiv 2011.08939), binary case.

    Stream 1: instance logits ``c_n = w^T h_n``; the critical instance is ``m = argmax_n c_n``.
    Stream 2: ``q_n = Q h_n``, attention ``A_n = softmax_n(<q_n, q_m> / sqrt(d_q))``, ``b = sum_n A_n V h_n``,
    bag logit ``u^T b``. Output: the mean of ``max_n c_n`` and the bag logit (the paper's 0.5 (c_m + c_b)).
    (B, N, D), (B, N) -> logits (B,), attention (B, N).
    """

    def __init__(self, dim: int, hidden: int = 128, dropout: float = 0.0) -> None:
        super().__init__()
        self.instance_classifier = nn.Linear(dim, 1)
        self.q = nn.Sequential(nn.Linear(dim, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.Tanh())
        self.v = nn.Sequential(nn.Dropout(dropout), nn.Linear(dim, dim), nn.ReLU())
        self.bag_classifier = nn.Linear(dim, 1)

    def forward(self, h: Tensor, mask: Tensor) -> tuple[Tensor, Tensor | None]:
        inst = self.instance_classifier(h).squeeze(-1).masked_fill(~mask, float("-inf"))
        max_logit, critical = inst.max(dim=1)
        q = self.q(h)
        q_crit = q.gather(1, critical[:, None, None].expand(-1, 1, q.shape[-1]))  # (B, 1, d_q)
        attention = _masked_softmax((q * q_crit).sum(-1) / math.sqrt(q.shape[-1]), mask)
        bag = torch.einsum("bn,bnd->bd", attention, self.v(h))
        return 0.5 * (max_logit + self.bag_classifier(bag).squeeze(-1)), attention


AGGREGATORS: dict[str, type[nn.Module]] = {
    "mean": MeanPoolMIL,
    "max": MaxPoolMIL,
    "abmil": AttentionMIL,
    "gated_abmil": GatedAttentionMIL,
    "dsmil": DSMIL,
}


def make_aggregator(name: str, dim: int, dropout: float = 0.0) -> nn.Module:
    """Build an aggregator by name (see ``AGGREGATORS``) for ``dim``-dimensional instance features."""
    if name not in AGGREGATORS:
        raise ConfigError(f"unknown aggregator {name!r}; valid: {', '.join(AGGREGATORS)}")
    if name in ("mean", "max"):
        return AGGREGATORS[name](dim)
    return AGGREGATORS[name](dim, dropout=dropout)
