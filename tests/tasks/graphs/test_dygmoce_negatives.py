"""DyGLib's negative samplers (same draws as its code) and EdgeBank's published UCI number (protocol fidelity)."""

from __future__ import annotations

import numpy as np
import pytest
from zoo_testing import need_dataset

from zoo.errors import ConfigError
from zoo_tasks.graphs.dynamic.edgebank import UCI_MEMORY, edgebank_scores
from zoo_tasks.graphs.dynamic.events import read_collegemsg
from zoo_tasks.graphs.dynamic.metrics import averaged_metrics
from zoo_tasks.graphs.dynamic.negatives import NegativeEdgeSampler, eval_sampler, evaluation_negatives
from zoo_tasks.graphs.dynamic.split import Interactions, link_prediction_split


def test_random_negatives_are_dyglibs_randint_draws():
    src, dst = np.array([5, 3, 5, 9]), np.array([2, 2, 8, 1])
    sampler = NegativeEdgeSampler(src, dst, seed=2)
    rs = np.random.RandomState(2)
    expect_src = np.array([3, 5, 9])[rs.randint(0, 3, 6)]
    expect_dst = np.array([1, 2, 8])[rs.randint(0, 3, 6)]
    got = sampler.sample(6)
    assert np.array_equal(got[0], expect_src) and np.array_equal(got[1], expect_dst)
    data = Interactions(src, dst, np.arange(4.0), np.arange(1, 5))
    first = evaluation_negatives(data, sampler, batch_size=3)
    assert np.array_equal(first[0], src)  # random NS keeps the positive sources
    assert all(np.array_equal(a, b) for a, b in zip(first, evaluation_negatives(data, sampler, 3)))  # reset: same


def test_historical_negatives_are_past_edges_not_in_the_batch():
    src, dst, ts = np.array([1, 2, 3, 4, 1]), np.array([2, 3, 4, 1, 3]), np.array([0.0, 1.0, 2.0, 3.0, 4.0])
    sampler = NegativeEdgeSampler(src, dst, ts, last_observed_time=1.0, strategy="historical", seed=0)
    neg_src, neg_dst = sampler.sample(2, src[3:], dst[3:], 3.0, 4.0)
    pairs = list(zip(neg_src.tolist(), neg_dst.tolist()))
    # edges up to the batch start (t <= 3) minus the batch's own (4, 1), (1, 3); drawn without replacement
    assert len(set(pairs)) == 2 and set(pairs) <= {(1, 2), (2, 3), (3, 4)}
    inductive = NegativeEdgeSampler(src, dst, ts, last_observed_time=1.0, strategy="inductive", seed=0)
    neg_src, neg_dst = inductive.sample(1, src[3:], dst[3:], 3.0, 4.0)
    assert (int(neg_src[0]), int(neg_dst[0])) == (3, 4)  # seen after the last observed time, not in the batch
    with pytest.raises(ConfigError, match="negative_sampling='hard'"):
        NegativeEdgeSampler(src, dst, strategy="hard")


def test_edgebank_reproduces_dyglibs_published_uci_ap():
    split = link_prediction_split(read_collegemsg(need_dataset("CollegeMsg") / "CollegeMsg.txt"))
    history = Interactions(*(np.concatenate([getattr(split.train, f), getattr(split.val, f)])
                             for f in ("src", "dst", "ts", "edge_ids")))  # fmt: skip
    neg = evaluation_negatives(split.test, eval_sampler(split, "test", "random"), 200)
    pos_s, neg_s = edgebank_scores(history, split.test, split.test, *neg, 200, UCI_MEMORY["random"])
    ap = averaged_metrics(pos_s, neg_s, 200)["ap"]
    assert abs(ap - 0.7620) < 0.0005  # DyGLib (Yu et al. 2023), Table: EdgeBank, UCI, random NS, AP 76.20
