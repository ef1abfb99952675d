"""Diffusion-TS's metrics (discriminative, predictive, context-FID) and the TS2Vec encoder behind context-FID:
behaviour on data of known similarity, determinism, the caller's RNG and threads left alone, and input checks.
Iteration counts are tiny; the protocol's defaults are only timed, not run here."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from zoo.errors import ConfigError
from zoo_tasks.timeseries.generation.diffusion_ts_metrics import (
    context_fid,
    discriminative_score,
    frechet_distance,
    predictive_score,
)
from zoo_tasks.timeseries.generation.ts2vec import (
    TSEncoder,
    encode_full_series,
    fit_ts2vec,
    hierarchical_contrastive_loss,
)


def sines(n: int, channels: int, seed: int, length: int = 24) -> np.ndarray:
    """Windows in [0, 1] of one random-frequency, random-phase sine per window, each channel a fixed phase later,
    so the last channel follows from the others (the predictive score has something to learn)."""
    rng = np.random.default_rng(seed)
    freq, phase = rng.uniform(0.05, 0.15, (n, 1, 1)), rng.uniform(0, 2 * np.pi, (n, 1, 1))
    lag = np.linspace(0, np.pi / 2, channels)[None, None, :]
    return ((np.sin(2 * np.pi * freq * np.arange(length)[None, :, None] + phase + lag) + 1) / 2).astype(np.float32)


def noise_like(x: np.ndarray, seed: int = 99) -> np.ndarray:
    return np.random.default_rng(seed).uniform(0, 1, x.shape).astype(np.float32)


@pytest.mark.slow(reason="trains the discriminator GRU twice")
def test_discriminative_score_is_near_zero_for_the_same_distribution_and_near_half_for_noise():
    real, same = sines(400, 8, seed=0), sines(400, 8, seed=1)
    assert discriminative_score(real, same, iterations=200) < 0.1
    assert discriminative_score(real, noise_like(real), iterations=200) > 0.4


@pytest.mark.slow(reason="trains the predictor GRU twice")
def test_predictive_score_is_lower_when_trained_on_the_real_distribution_than_on_noise():
    real, same = sines(256, 4, seed=0), sines(256, 4, seed=1)
    on_same = predictive_score(real, same, iterations=300)
    on_noise = predictive_score(real, noise_like(same), iterations=300)
    assert 0 <= on_same < on_noise - 0.05


@pytest.mark.slow(reason="trains the TS2Vec encoder twice")
def test_context_fid_is_zero_for_the_same_set_and_grows_with_a_shift():
    real = sines(128, 3, seed=0)
    fids = [context_fid(real, real + shift, iterations=5) for shift in (0.0, 0.1, 0.5)]
    assert abs(fids[0]) < 1e-3
    assert 1e-3 < fids[1] < fids[2]


def test_frechet_distance_matches_the_closed_form_for_gaussian_statistics():
    a = np.array([[0.0, 0.0], [2.0, 0.0], [0.0, 2.0], [2.0, 2.0]])  # mean (1, 1), covariance 4/3 I
    b = 2 * a + 1  # mean (3, 3), covariance 16/3 I
    # |mu_a - mu_b|^2 + tr(S_a + S_b - 2 (S_a S_b)^(1/2)) = 8 + 2 (4/3 + 16/3 - 16/3)
    assert frechet_distance(a, b) == pytest.approx(8 + 8 / 3)


@pytest.mark.parametrize(
    "metric",
    [
        lambda r, f, s: discriminative_score(r, f, iterations=3, seed=s),
        lambda r, f, s: predictive_score(r, f, iterations=3, seed=s),
        lambda r, f, s: context_fid(r, f, iterations=2, seed=s),
    ],
    ids=["discriminative", "predictive", "context_fid"],
)
def test_each_metric_is_deterministic_and_leaves_the_callers_rng_and_threads_alone(metric):
    real, fake = sines(40, 3, seed=0), noise_like(sines(40, 3, seed=1))
    torch.manual_seed(1234)
    np.random.seed(1234)
    torch_state, numpy_state, threads = torch.get_rng_state(), np.random.get_state(), torch.get_num_threads()
    first = metric(real, fake, 7)
    assert torch.equal(torch.get_rng_state(), torch_state)
    assert all(np.array_equal(x, y) for x, y in zip(np.random.get_state(), numpy_state))
    assert torch.get_num_threads() == threads
    assert metric(real, fake, 7) == first


def test_bad_inputs_raise_config_error():
    real = sines(8, 3, seed=0)
    for fake in (sines(8, 3, seed=1, length=12), sines(8, 2, seed=1), real[0]):  # other T, other C, not 3-d
        for metric in (discriminative_score, predictive_score, context_fid):
            with pytest.raises(ConfigError):
                metric(real, fake, iterations=1)
    with pytest.raises(ConfigError, match="C >= 2"):
        predictive_score(real[..., :1], real[..., :1], iterations=1)
    with pytest.raises(ConfigError, match="at least 2"):
        discriminative_score(real, real[:1], iterations=1)
    with pytest.raises(ConfigError, match="at least 2"):
        context_fid(real[:1], real, iterations=1)
    with pytest.raises(ConfigError, match="finite"):
        discriminative_score(real, np.full_like(real, np.nan), iterations=1)


def test_ts2vec_encoder_keeps_the_length_and_its_embeddings_are_per_window():
    x = torch.rand(2, 24, 3)
    encoder = TSEncoder(3)  # TS2Vec's defaults: hidden 64, depth 10, 320 outputs
    assert encoder(x).shape == (2, 24, 320)
    assert len(encoder.blocks) == 11 and encoder.blocks[-1].conv1.dilation == (1024,)
    trained = fit_ts2vec(torch.rand(10, 24, 3), iterations=2, output_dims=16, hidden_dims=8, depth=2)
    embeddings = encode_full_series(trained, x)
    assert embeddings.shape == (2, 16) and embeddings.dtype == np.float64


def test_hierarchical_contrastive_loss_is_small_for_matching_views_and_large_for_mismatched_ones():
    z = 10 * torch.eye(16).reshape(4, 4, 16)  # every (row, step) its own direction
    assert hierarchical_contrastive_loss(z, z).item() < 1e-6
    assert hierarchical_contrastive_loss(z, z.roll(1, 0)).item() > 10


def test_metrics_run_under_inference_mode():
    """Lightning tests under ``torch.inference_mode``; the metrics train networks, so they must leave it."""
    real = np.random.default_rng(0).random((20, 8, 3))
    with torch.inference_mode():
        assert 0 <= discriminative_score(real, real, iterations=2, batch_size=4) <= 0.5
        assert predictive_score(real, real, iterations=2, batch_size=4) >= 0
        assert abs(context_fid(real, real, iterations=2)) < 1e-3
