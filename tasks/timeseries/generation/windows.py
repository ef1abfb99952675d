"""Windows of a domain's series and the per-domain normalisers (TimeDP's ``utils/prepare_datasets.py`` and
``ldm/data/tsg_dataset.py``, microsoft/TimeCraft).

- Windows of length L with stride L (non-overlapping), cut from each series; a window touching a gap (NaN) is
  dropped. Each channel of a multivariate file is its own univariate series (TimeDP's ``(n c) t 1``).
- Held out: the last 10 % of each series' windows in time (at least one when it has two or more), TimeDP's
  ``test_portion = max(1, int(0.1 * N))``; these are the in-domain test windows.
- Normalisation per domain, fitted on that domain's training windows only (TimeDP fits on its ``*_train.npy``):
  ``"centered_pit"`` (TimeDP's default: the empirical CDF of every training value, mapped to [-1, 1]),
  ``"zscore"`` (one mean and std per domain) or ``"none"``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from zoo.errors import ConfigError

NORMALIZATIONS = ("centered_pit", "zscore", "none")
HOLDOUT = 0.1


def cut_windows(series: np.ndarray, length: int, stride: int | None = None) -> np.ndarray:
    """(N, length) windows of a 1-D series starting at 0, stride, 2 * stride, ...; windows with a NaN are dropped."""
    stride = stride or length
    starts = np.arange(0, len(series) - length + 1, stride)
    if len(starts) == 0:
        return np.zeros((0, length))
    windows = np.stack([series[s : s + length] for s in starts])
    return windows[np.isfinite(windows).all(axis=1)]


def split_windows(
    series_list: list[np.ndarray], length: int, holdout: float = HOLDOUT
) -> tuple[np.ndarray, np.ndarray]:
    """(train (N, L), held-out (M, L)) windows of a domain: the last ``holdout`` fraction of each series' windows
    (at least one per series with >= 2 windows) are held out, in time order."""
    train, test = [], []
    for series in series_list:
        windows = cut_windows(series, length)
        n = len(windows)
        held = max(1, int(n * holdout)) if n >= 2 else 0
        train.append(windows[: n - held])
        test.append(windows[n - held :])
    return np.concatenate(train).reshape(-1, length), np.concatenate(test).reshape(-1, length)


@dataclass
class Normalizer:
    """One domain's normaliser (TimeDP's ``fit_normalizer`` / ``transform`` / ``inverse_transform``).

    ``centered_pit``: ``u = 2 * ECDF(x) - 1`` with ECDF the right-continuous empirical CDF of the fitted values
    (statsmodels' ``ECDF``: ``searchsorted(sorted, x, "right") / n``); the inverse interpolates the ECDF's
    steps (``np.interp((u + 1) / 2, y, x)``, with the ``-inf`` first knot replaced by the smallest value, as
    TimeDP does). ``zscore``: ``(x - mean) / (std + 1e-8)``.
    """

    kind: str
    mean: float = 0.0
    std: float = 1.0
    sorted_values: np.ndarray | None = None

    @classmethod
    def fit(cls, values: np.ndarray, kind: str) -> Normalizer:
        if kind not in NORMALIZATIONS:
            raise ConfigError(f"unknown normalize {kind!r}; choose one of {', '.join(NORMALIZATIONS)}")
        flat = np.asarray(values, dtype=np.float64).reshape(-1)
        flat = flat[np.isfinite(flat)]
        if flat.size == 0:
            raise ConfigError("cannot fit a normaliser on no values")
        if kind == "centered_pit":
            return cls(kind, sorted_values=np.sort(flat))
        if kind == "zscore":
            return cls(kind, mean=float(flat.mean()), std=float(flat.std()))
        return cls(kind)

    def transform(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, dtype=np.float64)
        if self.kind == "centered_pit":
            ranks = np.searchsorted(self.sorted_values, x.reshape(-1), side="right") / len(self.sorted_values)
            return (2.0 * ranks - 1.0).reshape(x.shape)
        if self.kind == "zscore":
            return (x - self.mean) / (self.std + 1e-8)
        return x

    def inverse(self, u: np.ndarray) -> np.ndarray:
        u = np.asarray(u, dtype=np.float64)
        if self.kind == "centered_pit":
            n = len(self.sorted_values)
            knots_y = np.arange(n + 1) / n
            knots_x = np.concatenate([self.sorted_values[:1], self.sorted_values])
            return np.interp((u + 1.0) / 2.0, knots_y, knots_x)
        if self.kind == "zscore":
            return u * self.std + self.mean
        return u

    @property
    def bounded(self) -> bool:
        """True when normalised values lie in [-1, 1] (so a sampler may clip its x0 estimate there)."""
        return self.kind == "centered_pit"
