"""Learned instance encoders that run before the MIL projection layer (for raw-pixel instances)."""

from __future__ import annotations

from torch import Tensor, nn


class DigitsEncoder(nn.Module):
    """A LeNet-style encoder for 8x8 digit instances (after the MNIST-bags feature extractor of Ilse et al.,
    ICML 2018, arXiv 1802.04712, scaled down): conv3x3(16)-ReLU-maxpool-conv3x3(32)-ReLU-maxpool-flatten.

    Shapes: (M, 64) flattened 8x8 images -> (M, 128) features.
    """

    out_dim = 128

    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Flatten(),
        )

    def forward(self, x: Tensor) -> Tensor:
        if x.shape[-1] != 64:
            raise ValueError(f"DigitsEncoder expects flattened 8x8 images (..., 64), got {tuple(x.shape)}")
        return self.net(x.reshape(-1, 1, 8, 8))
