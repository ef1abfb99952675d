"""Test-input corruptions (tasks/timeseries/corruption.py): the stated rates, the seeded reproducibility every model
relies on."""

from __future__ import annotations

import pytest
import torch

from zoo.errors import ConfigError
from zoo_tasks.timeseries.corruption import Corruption, CorruptionStream, corrupt

X = torch.randn(64, 96, 7, generator=torch.Generator().manual_seed(0))


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


def test_missing_zero_fills_about_rate_of_points():
    out = corrupt(X, Corruption("missing", 0.1), _gen())
    lost = out == 0
    assert 0.09 < lost.float().mean() < 0.11
    assert torch.equal(out[~lost], X[~lost])


def test_spikes_hit_about_rate_of_points_with_the_stated_size():
    out = corrupt(X, Corruption("spike", 0.02, size=5.0), _gen())
    diff = (out - X).abs()
    hit = diff > 0
    assert 0.015 < hit.float().mean() < 0.025
    torch.testing.assert_close(diff[hit], torch.full_like(diff[hit], 5.0))


def test_noise_has_the_stated_std_everywhere():
    out = corrupt(X, Corruption("noise", 0.3), _gen())
    assert abs(float((out - X).std()) - 0.3) < 0.01
    assert bool(((out - X) != 0).all())


def test_stream_is_reproducible_and_independent_per_kind():
    kinds = [Corruption("missing", 0.1), Corruption("spike", 0.02), Corruption("noise", 0.3)]
    a, b = CorruptionStream(kinds, seed=3), CorruptionStream(kinds, seed=3)
    for _ in range(2):  # successive batches
        xa, xb = a(X), b(X)
        for kind in ("missing", "spike", "noise"):
            assert torch.equal(xa[kind], xb[kind])
    only_noise = CorruptionStream([Corruption("noise", 0.3)], seed=3)
    fresh = CorruptionStream(kinds, seed=3)
    assert torch.equal(only_noise(X)["noise"], fresh(X)["noise"])  # adding kinds does not shift the others
    assert not torch.equal(CorruptionStream(kinds, seed=4)(X)["noise"], CorruptionStream(kinds, seed=3)(X)["noise"])


def test_bad_corruptions_are_clear_errors():
    with pytest.raises(ConfigError, match="unknown corruption"):
        Corruption("dropout", 0.1)
    with pytest.raises(ConfigError, match="out of range"):
        Corruption("missing", 1.5)
