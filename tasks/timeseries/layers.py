"""Building blocks shared by the patch forecasters: patching, positional encoding, encoder layers, flatten head."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from zoo.errors import ConfigError


def num_patches(seq_len: int, patch_len: int, stride: int) -> int:
    """Patches of a length-``seq_len`` series right-padded by ``stride`` (PatchTST's padding): (L-p)/s + 2."""
    if patch_len > seq_len or stride <= 0:
        raise ConfigError(f"patch_len {patch_len} / stride {stride} do not fit seq_len {seq_len}")
    return (seq_len - patch_len) // stride + 2


def check_window(x: Tensor, seq_len: int, num_channels: int) -> None:
    """Raise a ConfigError unless ``x`` is (B, seq_len, num_channels), the window a forecaster was built for."""
    _, length, c = x.shape
    if length != seq_len or c != num_channels:
        raise ConfigError(
            f"input is (B, {length}, {c}) but the model was built for (B, {seq_len}, {num_channels}); "
            "set model seq_len / num_channels to match the data"
        )


def patchify(x: Tensor, patch_len: int, stride: int) -> Tensor:
    """(N, L) -> (N, P, patch_len): replicate-pad ``stride`` values at the end, then unfold."""
    x = F.pad(x.unsqueeze(1), (0, stride), mode="replicate").squeeze(1)
    return x.unfold(-1, patch_len, stride)


def sinusoidal_encoding(length: int, d_model: int) -> Tensor:
    """(length, d_model) fixed sine/cosine positional encoding (Vaswani et al. 2017)."""
    position = torch.arange(length, dtype=torch.float32).unsqueeze(1)
    div = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32) * (-math.log(10000.0) / d_model))
    pe = torch.zeros(length, d_model)
    pe[:, 0::2] = torch.sin(position * div)
    pe[:, 1::2] = torch.cos(position * div)[:, : d_model // 2]
    return pe


class _BatchNormTokens(nn.Module):
    """BatchNorm1d over the feature axis of (N, S, D) tokens (PatchTST's normalisation)."""

    def __init__(self, d_model: int):
        super().__init__()
        self.norm = nn.BatchNorm1d(d_model)

    def forward(self, x: Tensor) -> Tensor:
        return self.norm(x.transpose(1, 2)).transpose(1, 2)


def _norm(kind: str, d_model: int) -> nn.Module:
    if kind == "layer":
        return nn.LayerNorm(d_model)
    if kind == "batch":
        return _BatchNormTokens(d_model)
    raise ConfigError(f"unknown norm {kind!r}; choose 'layer' or 'batch'")


class EncoderLayer(nn.Module):
    """Post-norm Transformer encoder layer (Time-Series-Library's ``EncoderLayer``): multi-head attention,
    residual + norm, GELU feed-forward ``d_model -> d_ff -> d_model``, residual + norm.

    ``causal=True`` masks attention to earlier tokens (SEER's replaced-attention layer). x (N, S, D) -> same.
    """

    def __init__(
        self, d_model: int, n_heads: int, d_ff: int, dropout: float = 0.0, causal: bool = False, norm: str = "layer"
    ):
        super().__init__()
        if d_model % n_heads:
            raise ConfigError(f"d_model {d_model} is not divisible by n_heads {n_heads}")
        self.n_heads, self.causal, self.dropout = n_heads, causal, dropout
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)
        self.ff = nn.Sequential(nn.Linear(d_model, d_ff), nn.GELU(), nn.Dropout(dropout), nn.Linear(d_ff, d_model))
        self.norm1, self.norm2 = _norm(norm, d_model), _norm(norm, d_model)
        self.drop = nn.Dropout(dropout)

    def forward(self, x: Tensor) -> Tensor:
        n, s, d = x.shape
        q, k, v = self.qkv(x).view(n, s, 3, self.n_heads, d // self.n_heads).permute(2, 0, 3, 1, 4)
        attn = F.scaled_dot_product_attention(
            q, k, v, dropout_p=self.dropout if self.training else 0.0, is_causal=self.causal
        )
        x = self.norm1(x + self.drop(self.out(attn.transpose(1, 2).reshape(n, s, d))))
        return self.norm2(x + self.drop(self.ff(x)))


class FlattenHead(nn.Module):
    """(N, S, D) tokens -> flatten -> Linear(S * D, pred_len) -> dropout -> (N, pred_len).

    The dropout acts on the forecast itself, as in PatchTST's and SEER's reference heads."""

    def __init__(self, num_tokens: int, d_model: int, pred_len: int, dropout: float = 0.0):
        super().__init__()
        self.linear = nn.Linear(num_tokens * d_model, pred_len)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: Tensor) -> Tensor:
        return self.dropout(self.linear(x.flatten(1)))
