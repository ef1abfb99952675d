"""PatchTST baseline (Nie et al., "A Time Series is Worth 64 Words: Long-term Forecasting with Transformers",
ICLR 2023, arXiv 2211.14730; Sec. 3.1, the supervised PatchTST/42), sized like SEER so the table compares
architectures, not budgets."""

from __future__ import annotations

import torch
from torch import Tensor, nn

from zoo.nn.revin import RevIN
from zoo.nn.transformer import EncoderLayer
from zoo_tasks.timeseries.forecaster import (
    Forecast,
    Forecaster,
    check_from_data,
    check_positive,
    check_probability,
)
from zoo_tasks.timeseries.patching import FlattenHead, check_window, num_patches, patchify


class PatchTSTNet(nn.Module):
    """Channel-independent PatchTST/42-style supervised forecaster.

    RevIN -> patching (``patch_len``, ``stride``, end-padded by ``stride``) -> linear patch embedding +
    learnable position embedding -> ``e_layers`` post-norm encoder layers with BatchNorm -> flatten + linear
    head -> RevIN⁻¹. (The original's residual attention scores between layers are not used.)

    Shapes: x (B, seq_len, C) -> :class:`~zoo_tasks.timeseries.forecaster.Forecast` with the forecast
    (B, pred_len, C) and no routing.
    """

    def __init__(
        self,
        seq_len: int = 96,
        pred_len: int = 96,
        num_channels: int | None = None,
        d_model: int = 256,
        n_heads: int = 16,
        d_ff: int = 512,
        e_layers: int = 2,
        patch_len: int = 16,
        stride: int = 8,
        dropout: float = 0.2,
        head_dropout: float = 0.0,
    ):
        super().__init__()
        check_from_data(num_channels=num_channels)
        check_positive(
            seq_len=seq_len, pred_len=pred_len, num_channels=num_channels, d_model=d_model, n_heads=n_heads,
            d_ff=d_ff, e_layers=e_layers, patch_len=patch_len, stride=stride,
        )  # fmt: skip
        check_probability(dropout=dropout, head_dropout=head_dropout)
        self.seq_len, self.pred_len, self.num_channels = seq_len, pred_len, num_channels
        self.patch_len, self.stride = patch_len, stride
        n_patches = num_patches(seq_len, patch_len, stride)
        self.revin = RevIN(num_channels)
        self.embed = nn.Linear(patch_len, d_model)
        self.pos = nn.Parameter(torch.empty(n_patches, d_model).uniform_(-0.02, 0.02))
        self.dropout = nn.Dropout(dropout)
        self.encoder = nn.Sequential(
            *[EncoderLayer(d_model, n_heads, d_ff, dropout, norm="batch") for _ in range(e_layers)]
        )
        self.head = FlattenHead(n_patches, d_model, pred_len, head_dropout)

    def forward(self, x: Tensor) -> Forecast:
        check_window(x, self.seq_len, self.num_channels)
        b, length, c = x.shape
        x, stats = self.revin.normalize(x)
        x = x.transpose(1, 2).reshape(b * c, length)
        tokens = self.dropout(self.embed(patchify(x, self.patch_len, self.stride)) + self.pos)
        out = self.head(self.encoder(tokens)).view(b, c, self.pred_len).transpose(1, 2)
        return Forecast(self.revin.denormalize(out, stats))


class PatchTSTForecaster(Forecaster):
    """LightningModule for :class:`PatchTSTNet` (MSE training loss as in the paper; same training loop,
    early stopping and corrupted-input test as SEER; the network's arguments and the other settings of
    :class:`~zoo_tasks.timeseries.forecaster.Forecaster` are this model's too). Batches are (x (B, seq_len, C),
    y (B, pred_len, C)). ``num_channels=None`` (the default) is the data's: ``zoo fit`` fills it from
    ``model_shapes()``."""

    default_loss = "mse"

    def build_network(self, **network) -> PatchTSTNet:
        return PatchTSTNet(**network)
