"""TS2Vec (Yue et al., "TS2Vec: Towards Universal Representation of Time Series", AAAI 2022; code zhihanyue/ts2vec,
copied unchanged into Diffusion-TS as ``Models/ts2vec/``): the encoder that Diffusion-TS's context-FID embeds
windows with.

- **Encoder** (``models/encoder.py``, ``models/dilated_conv.py``): a linear input projection to ``hidden_dims`` (64),
  timestamp masking of the projected vectors (training: each timestamp kept with probability 0.5, the ``binomial``
  mask; encoding: none), ``depth`` (10) residual blocks of two GELU-then-conv layers (kernel 3, "same" padding,
  dilation 2**i) plus a final block to ``output_dims`` (320) with a 1x1-conv residual projection, dropout 0.1 on the
  output.
- **Loss** (``models/losses.py``): the hierarchical contrastive loss, alpha 0.5 instance + 0.5 temporal contrast at
  every scale, max-pooling the time axis by 2 until one step remains (temporal_unit 0).
- **Training** (``ts2vec.py``, ``TS2Vec.fit``): AdamW (lr 1e-3, PyTorch's default weight decay 0.01), shuffled
  batches without the last partial one, two overlapping random crops of each batch (one random crop length and
  offsets per batch, a random shift per row); the weights used for encoding are the equal-weight running average of
  every step's weights (``torch.optim.swa_utils.AveragedModel``), as TS2Vec encodes with ``self.net``.
- **Full-series encoding** (``encode(..., encoding_window='full_series')``): the max over time of the per-step
  outputs.

Windows are complete (no NaN); TS2Vec's NaN handling and its cropping of series longer than ``max_train_length``
(3000 in Diffusion-TS) do not arise for such windows and are not built. Randomness (initialisation, crops, masks,
dropout, shuffling) comes from PyTorch's default CPU generator, which the caller seeds inside
``torch.random.fork_rng``.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.optim.swa_utils import AveragedModel


class _ConvBlock(nn.Module):
    def __init__(self, c_in: int, c_out: int, dilation: int, final: bool) -> None:
        super().__init__()
        # kernel 3: receptive field 2 * dilation + 1 is odd, so padding = dilation keeps the length ("same").
        self.conv1 = nn.Conv1d(c_in, c_out, 3, padding=dilation, dilation=dilation)
        self.conv2 = nn.Conv1d(c_out, c_out, 3, padding=dilation, dilation=dilation)
        self.projector = nn.Conv1d(c_in, c_out, 1) if c_in != c_out or final else None

    def forward(self, x: Tensor) -> Tensor:
        residual = x if self.projector is None else self.projector(x)
        return self.conv2(F.gelu(self.conv1(F.gelu(x)))) + residual


class TSEncoder(nn.Module):
    """TS2Vec's encoder: ``forward(x (B, T, C), keep (B, T) bool or None) -> (B, T, output_dims)``.

    ``keep`` marks the timestamps whose projected input is kept (False zeroes it); None keeps all.
    """

    def __init__(self, input_dims: int, output_dims: int = 320, hidden_dims: int = 64, depth: int = 10) -> None:
        super().__init__()
        self.input_fc = nn.Linear(input_dims, hidden_dims)
        channels = [hidden_dims] * depth + [output_dims]
        self.blocks = nn.Sequential(
            *(
                _ConvBlock(channels[i - 1] if i else hidden_dims, c, 2**i, final=i == len(channels) - 1)
                for i, c in enumerate(channels)
            )
        )
        self.repr_dropout = nn.Dropout(0.1)

    def forward(self, x: Tensor, keep: Tensor | None = None) -> Tensor:
        h = self.input_fc(x)
        if keep is not None:
            h = h * keep.unsqueeze(-1)
        return self.repr_dropout(self.blocks(h.transpose(1, 2))).transpose(1, 2)


def _pair_contrast(z: Tensor) -> Tensor:
    """Mean InfoNCE over groups ``z (G, 2K, D)`` whose rows k and k + K are positives, every other row a negative."""
    n = z.size(1)
    sim = (z @ z.transpose(1, 2)).masked_fill(torch.eye(n, dtype=torch.bool), float("-inf"))
    rows = torch.arange(n)
    return -sim.log_softmax(-1)[:, rows, (rows + n // 2) % n].mean()


def hierarchical_contrastive_loss(z1: Tensor, z2: Tensor, alpha: float = 0.5) -> Tensor:
    """TS2Vec's loss for the two views' outputs ``z1, z2 (B, T, D)`` of the same rows and timestamps; a scalar."""
    loss, levels = z1.new_zeros(()), 0
    while True:
        if z1.size(0) > 1:  # instance contrast: at each step, the other rows of the batch are the negatives
            loss = loss + alpha * _pair_contrast(torch.cat([z1, z2], 0).transpose(0, 1))
        levels += 1
        if z1.size(1) == 1:
            return loss / levels
        # temporal contrast: within a row, the other timestamps are the negatives
        loss = loss + (1 - alpha) * _pair_contrast(torch.cat([z1, z2], 1))
        z1 = F.max_pool1d(z1.transpose(1, 2), 2).transpose(1, 2)
        z2 = F.max_pool1d(z2.transpose(1, 2), 2).transpose(1, 2)


def _rows_slice(x: Tensor, start: Tensor, length: int) -> Tensor:
    """``x[b, start[b] : start[b] + length]`` for every row b; x (B, T, C) -> (B, length, C)."""
    return x[torch.arange(x.size(0))[:, None], start[:, None] + torch.arange(length)]


def _randint(low: int, high: int) -> int:
    return int(torch.randint(low, high, (1,)))


def fit_ts2vec(
    data: Tensor,
    iterations: int,
    *,
    batch_size: int = 8,
    lr: float = 1e-3,
    output_dims: int = 320,
    hidden_dims: int = 64,
    depth: int = 10,
) -> AveragedModel:
    """Train a TS2Vec encoder on ``data (N, T, C)`` (T >= 2) for ``iterations`` steps; returns the weight-averaged
    encoder (call ``encode_full_series`` on it)."""
    net = TSEncoder(data.size(2), output_dims, hidden_dims, depth)
    averaged = AveragedModel(net)
    averaged.update_parameters(net)  # the initial weights count in the average, as in TS2Vec.__init__
    optimizer = torch.optim.AdamW(net.parameters(), lr=lr)
    n, length = data.shape[:2]
    batch = min(batch_size, n)
    step = 0
    while step < iterations:
        order = torch.randperm(n)
        for first in range(0, n - batch + 1, batch):
            if step == iterations:
                break
            x = data[order[first : first + batch]]
            # Two crops overlapping on [left, right): view 1 spans [e_left, right), view 2 spans [left, e_right).
            crop = _randint(2, length + 1)
            left = _randint(0, length - crop + 1)
            right = left + crop
            e_left = _randint(0, left + 1)
            e_right = _randint(right, length + 1)
            shift = torch.randint(-e_left, length - e_right + 1, (batch,))
            view1 = _rows_slice(x, shift + e_left, right - e_left)
            view2 = _rows_slice(x, shift + left, e_right - left)
            out1 = net(view1, torch.rand(view1.shape[:2]) < 0.5)[:, -crop:]
            out2 = net(view2, torch.rand(view2.shape[:2]) < 0.5)[:, :crop]
            optimizer.zero_grad()
            hierarchical_contrastive_loss(out1, out2).backward()
            optimizer.step()
            averaged.update_parameters(net)
            step += 1
    return averaged.eval()


@torch.no_grad()
def encode_full_series(encoder: nn.Module, data: Tensor, batch_size: int = 256) -> np.ndarray:
    """Full-series embeddings of ``data (N, T, C)``: the encoder's outputs max-pooled over time, (N, output_dims)."""
    encoder.eval()
    parts = [encoder(data[i : i + batch_size]).amax(1) for i in range(0, len(data), batch_size)]
    return torch.cat(parts).double().numpy()
