"""Transformer encoder pieces shared by token models: the post-norm encoder layer and sinusoidal positions."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from zoo.errors import ConfigError

NORMS = ("layer", "batch")


def sinusoidal_encoding(length: int, d_model: int) -> Tensor:
    """(length, d_model) fixed sine/cosine positional encoding (Vaswani et al., "Attention Is All You Need",
    NeurIPS 2017, arXiv 1706.03762, Sec. 3.5): ``PE[p, 2i] = sin(p / 10000^(2i/d))``, ``PE[p, 2i+1] = cos(...)``."""
    position = torch.arange(length, dtype=torch.float32).unsqueeze(1)
    div = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32) * (-math.log(10000.0) / d_model))
    pe = torch.zeros(length, d_model)
    pe[:, 0::2] = torch.sin(position * div)
    pe[:, 1::2] = torch.cos(position * div)[:, : d_model // 2]
    return pe


class BatchNormTokens(nn.Module):
    """BatchNorm1d over the feature axis of (N, S, D) tokens (PatchTST's normalisation). State: ``norm.*``."""

    def __init__(self, d_model: int):
        super().__init__()
        self.norm = nn.BatchNorm1d(d_model)

    def forward(self, x: Tensor) -> Tensor:
        return self.norm(x.transpose(1, 2)).transpose(1, 2)


def token_norm(kind: str, d_model: int) -> nn.Module:
    """``"layer"`` -> LayerNorm, ``"batch"`` -> :class:`BatchNormTokens`, over the last axis of (N, S, D) tokens."""
    if kind == "layer":
        return nn.LayerNorm(d_model)
    if kind == "batch":
        return BatchNormTokens(d_model)
    raise ConfigError(f"unknown norm {kind!r}; choose one of {', '.join(NORMS)}")


class EncoderLayer(nn.Module):
    """Post-norm Transformer encoder layer (Vaswani et al. 2017, arXiv 1706.03762, Sec. 3.1-3.3; the layout of
    Time-Series-Library's ``EncoderLayer``):

    ``x = norm1(x + dropout(MHA(x)))``, ``x = norm2(x + dropout(FFN(x)))`` with ``FFN = Linear(d_model, d_ff) ->
    GELU -> dropout -> Linear(d_ff, d_model)``; attention dropout ``dropout`` in training. ``causal=True`` masks
    attention to earlier tokens. ``norm`` is ``"layer"`` or ``"batch"`` (PatchTST, Nie et al. 2023).

    Shapes: x (N, S, d_model) -> (N, S, d_model).
    State: ``qkv`` (3D, D) packed [q | k | v], ``out`` (D, D), ``ff.0`` (d_ff, D), ``ff.3`` (D, d_ff), ``norm1``,
    ``norm2``.
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
        self.norm1, self.norm2 = token_norm(norm, d_model), token_norm(norm, d_model)
        self.drop = nn.Dropout(dropout)

    def forward(self, x: Tensor) -> Tensor:
        n, s, d = x.shape
        q, k, v = self.qkv(x).view(n, s, 3, self.n_heads, d // self.n_heads).permute(2, 0, 3, 1, 4)
        attn = F.scaled_dot_product_attention(
            q, k, v, dropout_p=self.dropout if self.training else 0.0, is_causal=self.causal
        )
        x = self.norm1(x + self.drop(self.out(attn.transpose(1, 2).reshape(n, s, d))))
        return self.norm2(x + self.drop(self.ff(x)))
