"""The shared post-norm encoder layer equals a hand-written multi-head attention + feed-forward reference, its
causal mask hides later tokens, and its state-dict keys are the ones the forecasting records were trained with."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from zoo.errors import ConfigError
from zoo.nn.transformer import EncoderLayer, sinusoidal_encoding


def _reference(layer: EncoderLayer, x: torch.Tensor, causal: bool) -> torch.Tensor:
    n, s, d = x.shape
    h = layer.n_heads
    q, k, v = layer.qkv(x).split(d, dim=-1)
    q, k, v = (t.view(n, s, h, d // h).transpose(1, 2) for t in (q, k, v))
    scores = q @ k.transpose(-1, -2) / math.sqrt(d // h)
    if causal:
        scores = scores.masked_fill(torch.ones(s, s, dtype=torch.bool).triu(1), float("-inf"))
    attn = (scores.softmax(-1) @ v).transpose(1, 2).reshape(n, s, d)
    x = layer.norm1(x + layer.out(attn))
    return layer.norm2(x + layer.ff[3](F.gelu(layer.ff[0](x))))


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("norm", ["layer", "batch"])
def test_encoder_layer_matches_the_reference(causal, norm):
    torch.manual_seed(0)
    layer = EncoderLayer(16, 4, 32, dropout=0.3, causal=causal, norm=norm).eval()
    x = torch.randn(3, 5, 16)
    torch.testing.assert_close(layer(x), _reference(layer, x, causal), rtol=1e-5, atol=1e-5)


def test_causal_layer_ignores_later_tokens():
    torch.manual_seed(0)
    layer = EncoderLayer(8, 2, 16, causal=True).eval()
    x = torch.randn(2, 6, 8)
    x2 = x.clone()
    x2[:, 4:] += 5.0
    torch.testing.assert_close(layer(x)[:, :4], layer(x2)[:, :4])
    assert not torch.allclose(layer(x)[:, 4:], layer(x2)[:, 4:])


def test_state_dict_keys_are_stable():
    assert list(EncoderLayer(8, 2, 16).state_dict()) == [
        "qkv.weight", "qkv.bias", "out.weight", "out.bias", "ff.0.weight", "ff.0.bias", "ff.3.weight", "ff.3.bias",
        "norm1.weight", "norm1.bias", "norm2.weight", "norm2.bias",
    ]  # fmt: skip
    assert "norm1.norm.running_mean" in EncoderLayer(8, 2, 16, norm="batch").state_dict()


def test_bad_shapes_and_norms_are_config_errors():
    with pytest.raises(ConfigError, match="not divisible by n_heads 3"):
        EncoderLayer(8, 3, 16)
    with pytest.raises(ConfigError, match="unknown norm 'group'"):
        EncoderLayer(8, 2, 16, norm="group")


def test_sinusoidal_encoding_follows_vaswani():
    pe = sinusoidal_encoding(10, 6)
    p, i = 7, 1
    assert pe.shape == (10, 6)
    torch.testing.assert_close(pe[p, 2 * i], torch.tensor(math.sin(p / 10000 ** (2 * i / 6))))
    torch.testing.assert_close(pe[p, 2 * i + 1], torch.tensor(math.cos(p / 10000 ** (2 * i / 6))))
