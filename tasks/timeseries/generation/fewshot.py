"""TimeDP's unseen-domain sets (``utils/prepare_datasets.py`` and ``utils/test_utils.py``, microsoft/TimeCraft).

- ``stock``: windows of the Open column with stride 1, each divided by its first value
  (``uni_ori_data /= uni_ori_data[:, :1, :]``).
- ``web`` (and any other domain): windows with stride L of every series (``(b c) t 1``).
- ``np.random.seed(0); idx = np.random.choice(N, 2000 + 100)`` (with replacement, as TimeDP): the 2,000 test
  windows are ``idx[-2000:]`` and the k prompt windows ``idx[:k]`` for k in 3, 10, 100 (so the k = 3 prompts are
  the first of the k = 10 ones; a prompt window may also be a test window, as in TimeDP).
- Metrics z-score real and generated windows with the real test windows' mean and std (+ 1e-7); for ``web`` the
  mean and std come from the test values below their 99th percentile (TimeDP drops the top 1 % there; its
  indexing flattens the windows, so the statistics are all this keeps of it).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from zoo.errors import ConfigError
from zoo_tasks.timeseries.generation.windows import cut_windows

KS = (3, 10, 100)
NUM_TEST = 2000


@dataclass
class FewShotSet:
    """One unseen domain at one window length: the test windows (2000, L) and the prompt pools (k, L), raw scale."""

    name: str
    test: np.ndarray
    prompts: dict[int, np.ndarray]
    mean: float
    std: float

    def scale(self, x: np.ndarray) -> np.ndarray:
        """z-scored with the real test statistics (the metrics' common scale)."""
        return (np.asarray(x, dtype=np.float64) - self.mean) / (self.std + 1e-7)


def unseen_windows(name: str, series: list[np.ndarray], length: int) -> np.ndarray:
    """(N, L) candidate windows of an unseen domain (see the module docstring)."""
    if name == "stock":
        windows = cut_windows(series[0], length, stride=1)
        return windows / windows[:, :1]
    return np.concatenate([cut_windows(s, length) for s in series]).reshape(-1, length)


def fewshot_set(name: str, series: list[np.ndarray], length: int, ks=KS, seed: int = 0) -> FewShotSet:
    windows = unseen_windows(name, series, length)
    if len(windows) == 0:
        raise ConfigError(f"unseen domain {name!r} has no window of length {length}")
    rng = np.random.RandomState(seed)  # == np.random.seed(seed); np.random.choice(...)
    idx = rng.choice(len(windows), NUM_TEST + max(ks))
    test = windows[idx[-NUM_TEST:]]
    values = test[test < np.percentile(test, 99)] if name == "web" else test
    return FewShotSet(name, test, {k: windows[idx[:k]] for k in ks}, float(values.mean()), float(values.std()))
