"""EdgeBank (Poursafaei et al., NeurIPS 2022) as DyGLib evaluates it (``models/EdgeBank.py``,
``evaluate_models_utils.evaluate_edge_bank_link_prediction``): no parameters, no randomness. Before each test
batch the history is train + val + the test edges of earlier batches; the memory is a set of directed
(src, dst) pairs drawn from it; a pair scores 1.0 if remembered, else 0.0.

Memory modes (DyGLib's ``edge_bank_memory_mode`` / ``time_window_mode``):
- ``unlimited``: every history pair;
- ``time_window``: pairs with a time in [quantile(history ts, 1 - test_ratio), max ts] ("fixed_proportion");
- ``repeat_interval``: pairs in [max ts - mean repeat interval, max ts], the interval averaged over unique pairs;
- ``repeat_threshold``: pairs seen at least the mean number of times.
DyGLib's best UCI configs (``load_link_prediction_best_configs``): random NS -> unlimited, historical NS ->
time_window, inductive NS -> repeat_interval (:data:`UCI_MEMORY`).

DyGLib evaluates EdgeBank on the transductive test set only; for the new-node test set we use the same history
(train + val + every test edge before the batch), scored on the new-node edges and their negatives.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from zoo.errors import ConfigError
from zoo_tasks.graphs.dynamic.split import Interactions

MEMORY_MODES = ("unlimited", "time_window", "repeat_interval", "repeat_threshold")
UCI_MEMORY = {"random": "unlimited", "historical": "time_window", "inductive": "repeat_interval"}


def edge_memory(src: np.ndarray, dst: np.ndarray, ts: np.ndarray, mode: str, window: float = 0.15) -> set:
    """The remembered (src, dst) pairs of a history (arrays (M,)) under memory ``mode``."""
    if mode == "unlimited":
        return set(zip(src.tolist(), dst.tolist()))
    if mode == "repeat_threshold":
        counts: dict = defaultdict(int)
        for pair in zip(src.tolist(), dst.tolist()):
            counts[pair] += 1
        threshold = np.array(list(counts.values())).mean()
        return {pair for pair, c in counts.items() if c >= threshold}
    end = ts.max()
    if mode == "time_window":
        begin = np.quantile(ts, 1 - window)
    elif mode == "repeat_interval":
        times: dict = defaultdict(list)
        for s, d, t in zip(src.tolist(), dst.tolist(), ts.tolist()):
            times[(s, d)].append(t)
        total = sum(np.mean(np.diff(v)) for v in times.values() if len(v) > 1)
        begin = end - total / len(times)
    else:
        raise ConfigError(f"edgebank memory={mode!r}; valid: {', '.join(MEMORY_MODES)}")
    keep = (ts <= end) & (ts >= begin)
    return set(zip(src[keep].tolist(), dst[keep].tolist()))


def edgebank_scores(
    history: Interactions, stream: Interactions, queries: Interactions, neg_src: np.ndarray, neg_dst: np.ndarray,
    batch_size: int, mode: str = "unlimited", window: float = 0.15,
) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """Scores of ``queries`` (B,) and of their negatives (B,), in batches of ``batch_size``: before a batch the
    history is ``history`` plus the ``stream`` edges with a smaller edge id than the batch's first (``stream``
    is the test set; ``queries`` is the test set or its new-node subset)."""
    if mode not in MEMORY_MODES:
        raise ConfigError(f"edgebank memory={mode!r}; valid: {', '.join(MEMORY_MODES)}")
    pos, neg = np.zeros(len(queries)), np.zeros(len(queries))
    for start in range(0, len(queries), batch_size):
        sl = slice(start, start + batch_size)
        upto = int(np.searchsorted(stream.edge_ids, queries.edge_ids[sl][0]))
        memory = edge_memory(
            np.concatenate([history.src, stream.src[:upto]]),
            np.concatenate([history.dst, stream.dst[:upto]]),
            np.concatenate([history.ts, stream.ts[:upto]]),
            mode,
            window,
        )
        pos[sl] = [p in memory for p in zip(queries.src[sl].tolist(), queries.dst[sl].tolist())]
        neg[sl] = [p in memory for p in zip(neg_src[sl].tolist(), neg_dst[sl].tolist())]
    return pos, neg
