"""Feature standardisation of MIL bags with statistics of the training bags only.

- ``"zscore"``: the benchmark records' rule, kept bit for bit: mean / std of the training instances in float32,
  stds below 1e-8 replaced by 1. A feature that is constant on the training folds can get a float32 round-off std
  of ~1e-7 instead of 0, and a test value that differs is then divided by it (Elephant: test |z| up to ~4e8).
- ``"robust"``: median / IQR scaling (IQR / 1.349, the std of a normal) in float64; where the IQR is 0 (sparse or
  mostly-constant features) the std is used instead, and where that is 0 too (constant on the training folds) the
  feature is only centred; the result is clipped to ``[-clip, clip]``, so no test value can explode.
- ``"none"``: features as read.
"""

from __future__ import annotations

import numpy as np

from zoo.errors import ConfigError

MODES = ("zscore", "robust", "none")
_NORMAL_IQR = 1.349  # interquartile range of a standard normal


def standardize_mode(value: bool | str) -> str:
    """``True`` / ``False`` (older configs) -> ``"zscore"`` / ``"none"``; a mode name is checked."""
    if isinstance(value, bool):
        return "zscore" if value else "none"
    if value not in MODES:
        raise ConfigError(f"data.standardize: unknown mode {value!r}; valid: {', '.join(MODES)} (or true / false)")
    return value


def fit_transform(features: list[np.ndarray], train_idx: np.ndarray, mode: str, clip: float = 10.0) -> list[np.ndarray]:
    """``features`` (one (n_i, D) array per bag) standardised with the statistics of the bags in ``train_idx``."""
    if mode == "none":
        return features
    train = np.concatenate([features[i] for i in train_idx])
    if mode == "zscore":
        mean, std = train.mean(0), train.std(0)
        std[std < 1e-8] = 1.0  # the records' threshold: changing it changes Elephant's inputs on some folds
        return [((f - mean) / std).astype(np.float32) for f in features]
    if mode != "robust":
        raise ConfigError(f"data.standardize: unknown mode {mode!r}; valid: {', '.join(MODES)}")
    if not clip > 0:
        raise ConfigError(f"data.clip must be > 0, got {clip}")
    train = train.astype(np.float64)
    center = np.median(train, axis=0)
    q25, q75 = np.percentile(train, [25, 75], axis=0)
    scale = (q75 - q25) / _NORMAL_IQR
    negligible = 1e-12 * np.maximum(1.0, np.abs(center))  # float64 round-off of a constant column
    scale = np.where(scale > negligible, scale, train.std(axis=0))
    scale = np.where(scale > negligible, scale, 1.0)
    return [np.clip((f - center) / scale, -clip, clip).astype(np.float32) for f in features]
