"""Lloyd's k-means with k-means++ seeding and warm starts, on torch tensors (no sklearn, works on any device).

Hand-written because the well-kept implementations (scikit-learn, faiss) run on numpy arrays outside autograd's
device: a router's contrastive loss re-clusters its features on every training step, and warm-starting from the
previous step's centroids keeps the clusters stable.
"""

from __future__ import annotations

import torch
from torch import Tensor


@torch.no_grad()
def kmeans(
    x: Tensor, k: int, iters: int = 10, init: Tensor | None = None, generator: torch.Generator | None = None
) -> tuple[Tensor, Tensor]:
    """Lloyd's k-means. x (T, d) -> labels (T,) long in [0, k'), centroids (k', d) float32, with k' = min(k, T).

    ``init`` (k', d) warm-starts the centroids (ignored when its shape does not match); otherwise k-means++
    seeding (Arthur & Vassilvitskii, SODA 2007) draws the first centroid uniformly and each next one with
    probability proportional to the squared distance to the nearest chosen centroid, using ``generator`` (the
    global CPU generator when None). Empty clusters keep their previous centroid.
    """
    if x.dim() != 2 or x.shape[0] == 0:
        raise ValueError(f"kmeans expects a non-empty (T, d) tensor, got shape {tuple(x.shape)}")
    x = x.float()
    k = min(k, x.shape[0])
    if init is not None and init.shape == (k, x.shape[1]):
        centroids = init.to(x).clone()
    else:
        first = torch.randint(x.shape[0], (1,), generator=generator, device="cpu").item()
        centroids = x[first : first + 1]
        for _ in range(1, k):
            d2 = torch.cdist(x, centroids).min(dim=1).values.pow(2)
            probs = (d2 / d2.sum()).cpu() if d2.sum() > 0 else torch.full((x.shape[0],), 1.0 / x.shape[0])
            idx = torch.multinomial(probs, 1, generator=generator).item()
            centroids = torch.cat([centroids, x[idx : idx + 1]])
    for _ in range(iters):
        labels = torch.cdist(x, centroids).argmin(dim=1)
        sums = torch.zeros_like(centroids).index_add_(0, labels, x)
        counts = torch.bincount(labels, minlength=k).to(x.dtype)[:, None]
        centroids = torch.where(counts > 0, sums / counts.clamp_min(1), centroids)
    return torch.cdist(x, centroids).argmin(dim=1), centroids
