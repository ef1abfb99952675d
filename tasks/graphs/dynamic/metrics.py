"""DyGLib's link-prediction metrics (``utils/metrics.py``): scikit-learn average precision and ROC-AUC of each
evaluation batch over [positives, negatives], averaged over the batches (not pooled over the whole set)."""

from __future__ import annotations

import numpy as np
from sklearn.metrics import average_precision_score, roc_auc_score


def batch_metrics(pos: np.ndarray, neg: np.ndarray) -> dict[str, float]:
    """AP and AUC of one batch: ``pos`` (B,) scores of true edges, ``neg`` (B',) of negatives."""
    scores = np.concatenate([pos, neg])
    labels = np.concatenate([np.ones(len(pos)), np.zeros(len(neg))])
    return {"ap": float(average_precision_score(labels, scores)), "auc": float(roc_auc_score(labels, scores))}


def averaged_metrics(pos: np.ndarray, neg: np.ndarray, batch_size: int) -> dict[str, float]:
    """DyGLib's reported numbers: ``batch_metrics`` of consecutive batches of ``batch_size`` pairs, averaged."""
    rows = [batch_metrics(pos[i : i + batch_size], neg[i : i + batch_size]) for i in range(0, len(pos), batch_size)]
    return {k: float(np.mean([r[k] for r in rows])) for k in ("ap", "auc")}
