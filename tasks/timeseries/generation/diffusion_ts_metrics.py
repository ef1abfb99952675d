"""Diffusion-TS's unconditional-generation metrics (Yuan & Qiao, "Diffusion-TS: Interpretable Diffusion for General
Time Series Generation", ICLR 2024; code Y-debug-sys/Diffusion-TS), on windows scaled as that protocol scales them:
each channel min-max scaled to [0, 1] with the real series' range (``*_norm_truth_*.npy`` and the unnormalised
samples). Inputs are arrays (N, T, C); real and fake share T and C. The reference repeats each metric 5 times and
reports mean and 95% interval (``Experiments/metric_*.ipynb``), passing ``fake[:len(real)]``.

- **Discriminative score** (``Utils/discriminative_metric.py`` = TimeGAN's ``metrics/discriminative_metrics.py``,
  Yoon et al. NeurIPS 2019, jsyoon0823/TimeGAN): each of real and fake is split 80/20 at random
  (``train_test_divide``, train_rate 0.8); a 1-layer GRU (hidden ``int(C / 2)``, tanh) whose last state goes through
  a dense layer to one logit is trained 2000 iterations with Adam (TF defaults: lr 1e-3) on the summed sigmoid
  cross-entropies of 128 real windows (label 1) and 128 fake windows (label 0) drawn without replacement each
  iteration; the score is ``|0.5 - accuracy|`` on the two test parts together (probability > 0.5 means real).
- **Predictive score** (``Utils/predictive_metric.py`` = TimeGAN's ``metrics/predictive_metrics.py``, unchanged by
  Diffusion-TS): train on synthetic, test on real. A 1-layer GRU (hidden ``int(C / 2)``) reads the first C - 1
  channels of steps 0..T-2 and, through a dense layer and a sigmoid at every step, predicts the last channel of steps
  1..T-1; it is trained 5000 iterations with Adam on the mean absolute error of 128 fake windows drawn each
  iteration, and the score is the mean absolute error on every real window.
- **Context-FID** (``Utils/context_fid.py``, after Jeha et al. ICLR 2022, PSA-GAN): a TS2Vec encoder (see
  ``ts2vec.py``; output_dims 320, hidden 64, depth 10, batch size 8, lr 1e-3) is trained on the real windows for
  TS2Vec's default number of iterations (``TS2Vec.fit``: 200 when the real array has at most 100,000 values, else
  600); real and fake windows are embedded with ``encoding_window='full_series'`` and the score is the Fréchet
  distance ``|mu_r - mu_f|^2 + tr(S_r + S_f - 2 sqrtm(S_r S_f))`` (``calculate_fid``: ``np.cov`` with N - 1,
  ``scipy.linalg.sqrtm``, its real part).

Deviations: (1) the GRUs are PyTorch's, which apply the reset gate after the recurrent matrix product; TF1's
``GRUCell`` applies it before. Their initialisation follows TF1's (Glorot-uniform gate and candidate kernels over the
stacked input and state weights, gate biases 1, candidate biases 0, Glorot-uniform dense layer); Adam is PyTorch's
(TF1 adds epsilon to the bias-uncorrected denominator). (2) A hidden size of ``int(C / 2)`` is raised to 1 when C = 1
(TimeGAN's would be 0). (3) Context-FID uses every fake window; the reference indexes the fake embeddings with a
permutation of ``len(real)`` rows, i.e. uses the first ``len(real)`` fakes. (4) Randomness comes from ``seed``
(TensorFlow's and NumPy's global state in the reference), so a call is repeatable.

No maintained PyPI package offers these three metrics with PyTorch (TimeGAN's code and its ``timegan`` fork are
TensorFlow; ``tsgm``'s discriminative and downstream metrics take user-built Keras models and it has no context-FID),
so they are written here.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from zoo.errors import ConfigError
from zoo_tasks.timeseries.generation.ts2vec import encode_full_series, fit_ts2vec


def _windows(
    name: str, real, fake, *, min_windows: int, min_length: int = 1, min_channels: int = 1
) -> tuple[Tensor, Tensor]:
    """Checked float32 tensors of real (N, T, C) and fake (M, T, C)."""
    real, fake = np.asarray(real, dtype=np.float32), np.asarray(fake, dtype=np.float32)
    if real.ndim != 3 or fake.ndim != 3:
        raise ConfigError(f"real and fake must be windows (N, T, C); got shapes {real.shape} and {fake.shape}")
    if real.shape[1:] != fake.shape[1:]:
        raise ConfigError(f"real windows {real.shape[1:]} and fake windows {fake.shape[1:]} differ in (T, C)")
    n_real, length, channels = real.shape
    if min(n_real, len(fake)) < min_windows:
        raise ConfigError(f"{name} needs at least {min_windows} real and fake windows, got {n_real} and {len(fake)}")
    if length < min_length or channels < min_channels:
        raise ConfigError(f"{name} needs T >= {min_length} and C >= {min_channels}; got T={length}, C={channels}")
    if not (np.isfinite(real).all() and np.isfinite(fake).all()):
        raise ConfigError("real and fake windows must be finite (no NaN or inf)")
    return torch.from_numpy(real), torch.from_numpy(fake)


def _trains_networks(metric):
    """Run ``metric`` outside inference mode: it trains a network, and Lightning tests under ``inference_mode``
    (tensors made inside it cannot be saved for backward)."""

    @functools.wraps(metric)
    def wrapper(*args, **kwargs):
        with torch.inference_mode(False):
            return metric(*args, **kwargs)

    return wrapper


@contextmanager
def _seeded(seed: int) -> Iterator[None]:
    """Seed PyTorch's default CPU generator for the block and give the caller back its state afterwards."""
    with torch.random.fork_rng(devices=[]), torch.enable_grad():
        torch.default_generator.manual_seed(seed)
        yield


class _PostHocGRU(nn.Module):
    """TimeGAN's post-hoc network: a 1-layer GRU and a dense layer to one value per step, initialised like TF1's
    ``GRUCell`` and ``dense``. ``forward(x (B, T, C)) -> (outputs (B, T, 1), last (B, 1))`` before any sigmoid."""

    def __init__(self, input_dims: int, hidden: int) -> None:
        super().__init__()
        self.gru = nn.GRU(input_dims, hidden, batch_first=True)
        self.head = nn.Linear(hidden, 1)
        with torch.no_grad():
            # TF1 stacks [input; state] weights: a (C + H, 2H) gate kernel and a (C + H, H) candidate kernel.
            for rows, fan_out in ((slice(0, 2 * hidden), 2 * hidden), (slice(2 * hidden, None), hidden)):
                limit = math.sqrt(6 / (input_dims + hidden + fan_out))
                self.gru.weight_ih_l0[rows].uniform_(-limit, limit)
                self.gru.weight_hh_l0[rows].uniform_(-limit, limit)
            self.gru.bias_ih_l0.zero_()
            self.gru.bias_ih_l0[: 2 * hidden] = 1.0
            self.gru.bias_hh_l0.zero_()
            nn.init.xavier_uniform_(self.head.weight)
            self.head.bias.zero_()

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor]:
        outputs, last = self.gru(x)
        return self.head(outputs), self.head(last[0])


def _draw(x: Tensor, batch_size: int) -> Tensor:
    """Up to ``batch_size`` rows of x without replacement (TimeGAN's ``np.random.permutation(n)[:batch_size]``)."""
    return x[torch.randperm(len(x))[:batch_size]]


@_trains_networks
def discriminative_score(real, fake, *, iterations: int = 2000, batch_size: int = 128, seed: int = 0) -> float:
    """TimeGAN's discriminative score of real (N, T, C) and fake (M, T, C) windows: ``|0.5 - test accuracy|`` of a
    post-hoc GRU classifier, in [0, 0.5]; 0 means the classifier cannot tell them apart."""
    real, fake = _windows("the discriminative score", real, fake, min_windows=2)
    with _seeded(seed):
        net = _PostHocGRU(real.size(2), max(1, real.size(2) // 2))
        optimizer = torch.optim.Adam(net.parameters(), lr=1e-3)
        splits = []
        for x in (real, fake):
            order, n_train = torch.randperm(len(x)), int(len(x) * 0.8)
            splits.append((x[order[:n_train]], x[order[n_train:]]))
        (real_train, real_test), (fake_train, fake_test) = splits
        for _ in range(iterations):
            x_real, x_fake = _draw(real_train, batch_size), _draw(fake_train, batch_size)
            logits, n = net(torch.cat([x_real, x_fake]))[1][:, 0], len(x_real)
            loss = F.binary_cross_entropy_with_logits(logits[:n], torch.ones(n))  # mean over real + mean over fake
            loss = loss + F.binary_cross_entropy_with_logits(logits[n:], torch.zeros(len(x_fake)))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        with torch.no_grad():
            correct = (net(real_test)[1] > 0).sum() + (net(fake_test)[1] <= 0).sum()
    return abs(0.5 - float(correct) / (len(real_test) + len(fake_test)))


@_trains_networks
def predictive_score(real, fake, *, iterations: int = 5000, batch_size: int = 128, seed: int = 0) -> float:
    """TimeGAN's predictive score (train on synthetic, test on real) of real (N, T, C) and fake (M, T, C) windows,
    C >= 2, T >= 2: the mean absolute error on the real windows of a GRU trained on the fake ones to predict the last
    channel one step ahead from the other channels. Lower is better. The prediction is a sigmoid, so the last
    channel should lie in [0, 1], as the protocol's min-max scaling puts it."""
    real, fake = _windows("the predictive score", real, fake, min_windows=1, min_length=2, min_channels=2)
    with _seeded(seed):
        net = _PostHocGRU(real.size(2) - 1, max(1, real.size(2) // 2))
        optimizer = torch.optim.Adam(net.parameters(), lr=1e-3)
        for _ in range(iterations):
            x = _draw(fake, batch_size)
            loss = F.l1_loss(torch.sigmoid(net(x[:, :-1, :-1])[0]), x[:, 1:, -1:])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        with torch.no_grad():
            return F.l1_loss(torch.sigmoid(net(real[:, :-1, :-1])[0]), real[:, 1:, -1:]).item()


def frechet_distance(a: np.ndarray, b: np.ndarray) -> float:
    """Fréchet distance between Gaussians fitted to embeddings a (N, D) and b (M, D) (Diffusion-TS's
    ``calculate_fid``)."""
    from scipy.linalg import sqrtm

    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    cov_a, cov_b = np.cov(a, rowvar=False), np.cov(b, rowvar=False)
    cov_mean = np.real(sqrtm(cov_a @ cov_b))
    return float(np.sum((a.mean(0) - b.mean(0)) ** 2) + np.trace(cov_a + cov_b - 2 * cov_mean))


@_trains_networks
def context_fid(real, fake, *, seed: int = 0, iterations: int | None = None, batch_size: int = 8) -> float:
    """Diffusion-TS's context-FID of real (N, T, C) and fake (M, T, C) windows, N, M >= 2, T >= 2: the Fréchet
    distance of their full-series embeddings (N, 320) by a TS2Vec encoder trained on the real windows for
    ``iterations`` steps (None: 200 if N * T * C <= 100,000 else 600, TS2Vec's default). Lower is better."""
    real, fake = _windows("context-FID", real, fake, min_windows=2, min_length=2)
    if iterations is None:
        iterations = 200 if real.numel() <= 100_000 else 600
    with _seeded(seed):
        encoder = fit_ts2vec(real, iterations, batch_size=batch_size)
        return frechet_distance(encode_full_series(encoder, real), encode_full_series(encoder, fake))
