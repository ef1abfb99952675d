"""Patch-forecaster pieces: patching a series (PatchTST, Nie et al. 2023, arXiv 2211.14730, Sec. 3.1), the input
window check and the flatten-linear forecast head. The encoder layer lives in :mod:`zoo.nn.transformer`."""

from __future__ import annotations

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


class FlattenHead(nn.Module):
    """(N, S, D) tokens -> flatten -> Linear(S * D, pred_len) -> dropout -> (N, pred_len).

    The dropout acts on the forecast itself, as in PatchTST's and SEER's reference heads."""

    def __init__(self, num_tokens: int, d_model: int, pred_len: int, dropout: float = 0.0):
        super().__init__()
        self.linear = nn.Linear(num_tokens * d_model, pred_len)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: Tensor) -> Tensor:
        return self.dropout(self.linear(x.flatten(1)))
