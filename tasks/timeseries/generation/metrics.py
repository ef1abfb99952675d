"""TimeDP's generation metrics (microsoft/TimeCraft, ``TimeDP/metrics/feature_distance_eval.py``), on windows
already z-scored with the real test windows' statistics.

- **MDD** (marginal distribution difference, ``HistoLoss`` with 20 bins): for every time step t and channel c,
  a density histogram of the real values (bins spanning their min..max, max + 1e-2 if constant), the fake values'
  density in the same bins (bins half-open ``[left, right)``, values outside them count nowhere), the mean
  absolute difference over bins; MDD is the mean over (t, c).
- **KL** (``cal_distances``, 50 bins): ``scipy.stats.entropy(p_real, p_fake + 1e-9)`` of density histograms
  of the flattened values, the bins those of the real values.
- **MMD** (``mmd_metric``): ``mean k(x, x') + mean k(y, y') - 2 mean k(x, y)`` with sklearn's RBF kernel,
  ``gamma = 1 / (T * C)``, on flattened windows (biased estimate, as TimeDP).
Shapes: real (N, T[, C]), fake (M, T[, C]) arrays.
"""

from __future__ import annotations

import numpy as np


def _three_d(x) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    return x[..., None] if x.ndim == 2 else x


def mdd(real, fake, n_bins: int = 20) -> float:
    real, fake = _three_d(real), _three_d(fake)
    real32, fake32 = real.astype(np.float32), fake.astype(np.float32)
    n_real = real.shape[0]
    total, count = 0.0, 0
    for c in range(real.shape[2]):
        for t in range(real.shape[1]):
            x = real32[:, t, c]
            a, b = float(x.min()), float(x.max())
            b = b + 1e-2 if b == a else b
            edges = np.linspace(a, b, n_bins + 1, dtype=np.float32)
            delta = edges[1] - edges[0]
            hist, _ = np.histogram(x, bins=n_bins, range=(a, b))  # like torch.histc: max in the last bin
            density_real = hist / delta / n_real
            loc = 0.5 * (edges[1:] + edges[:-1])
            y = fake32[:, t, c][:, None]
            inside = (np.maximum(delta / 2 - np.abs(y - loc), 0) > 0) | (delta / 2 - (loc - y) == 0)
            density_fake = inside.mean(0) / delta
            total += float(np.abs(density_fake - density_real).mean())
            count += 1
    return total / count


def kl_flat(real, fake, n_bins: int = 50) -> float:
    from scipy.stats import entropy

    gt = np.asarray(real, dtype=np.float64).reshape(-1)
    sp = np.asarray(fake, dtype=np.float64).reshape(-1)
    gt, sp = gt[~np.isnan(gt)], sp[~np.isnan(sp)]
    hist_real, edges = np.histogram(gt, density=True, bins=n_bins)
    hist_fake, _ = np.histogram(sp, density=True, bins=edges)
    if not np.isfinite(hist_fake).all():  # no fake value inside the real range: density 0/0
        hist_fake = np.zeros_like(hist_real)
    return float(entropy(hist_real, hist_fake + 1e-9))


def mmd_rbf(real, fake) -> float:
    from sklearn.metrics.pairwise import rbf_kernel

    x = np.asarray(real, dtype=np.float32).reshape(len(real), -1)
    y = np.asarray(fake, dtype=np.float32).reshape(len(fake), -1)
    return float(rbf_kernel(x, x).mean() + rbf_kernel(y, y).mean() - 2 * rbf_kernel(x, y).mean())


def generation_metrics(real, fake) -> dict[str, float]:
    """{"mdd", "kl", "mmd"} of z-scored real and fake windows."""
    return {"mdd": mdd(real, fake), "kl": kl_flat(real, fake), "mmd": mmd_rbf(real, fake)}
