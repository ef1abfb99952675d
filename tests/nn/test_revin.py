"""RevIN: denormalize(normalize(x)) is the identity, the statistics are a value (no state on the module), and the
normalised lookback has zero mean / unit std per (sample, channel) before the affine map."""

from __future__ import annotations

import torch

from zoo.nn.revin import RevIN, RevINStats


def _series(b=4, length=48, c=3):
    torch.manual_seed(0)
    return torch.randn(b, length, c) * torch.tensor([1.0, 10.0, 0.1]) + torch.tensor([5.0, -3.0, 100.0])


def test_denormalize_inverts_normalize_with_a_learned_affine_map():
    revin = RevIN(3)
    with torch.no_grad():
        revin.weight.copy_(torch.tensor([0.5, 2.0, -1.5]))
        revin.bias.copy_(torch.tensor([0.1, -0.2, 3.0]))
    x = _series()
    x_norm, stats = revin.normalize(x)
    torch.testing.assert_close(revin.denormalize(x_norm, stats), x, rtol=1e-4, atol=1e-4)


def test_normalised_lookback_is_standardised_per_sample_and_channel():
    revin = RevIN(3, affine=False)
    x = _series()
    x_norm, stats = revin.normalize(x)
    assert isinstance(stats, RevINStats) and stats.mean.shape == stats.std.shape == (4, 1, 3)
    torch.testing.assert_close(x_norm.mean(1), torch.zeros(4, 3), atol=1e-3, rtol=0)
    torch.testing.assert_close(x_norm.std(1, unbiased=False), torch.ones(4, 3), atol=1e-3, rtol=0)
    assert not stats.mean.requires_grad and not stats.std.requires_grad
    assert list(dict(revin.named_parameters())) == [] and list(dict(revin.named_buffers())) == []


def test_statistics_travel_with_the_batch_not_the_module():
    revin = RevIN(3)
    a, b = _series(), _series() * 3 + 7
    a_norm, a_stats = revin.normalize(a)
    revin.normalize(b)  # a second batch in between must not change how the first one is mapped back
    torch.testing.assert_close(revin.denormalize(a_norm, a_stats), a, rtol=1e-4, atol=1e-4)
    assert sorted(revin.state_dict()) == ["bias", "weight"]
