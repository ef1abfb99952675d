"""TimeVAE, the issue's non-diffusion baseline (Desai et al., "TimeVAE: A Variational Auto-Encoder for Multivariate
Time Series Generation", arXiv 2111.08095; reference code abudesai/timeVAE, its ``vae_conv`` base model).

Base variant, as the reference builds it: an encoder of stride-2 Conv1d layers (hidden sizes 50, 100, 200, kernel
3, ReLU) flattened to the mean and log-variance of an 8-dimensional latent; a decoder of a dense layer to the last
encoder shape, transposed stride-2 convolutions back through the hidden sizes and to one channel (ReLU), then a
dense layer to the window. Loss: ``reconstruction_wt`` (3.0) times the summed squared error of the window plus
that of its mean over features (for one feature, the same error again), plus the KL to N(0, I), per window and
averaged over the batch (the reference sums over the batch; with Adam that only rescales the step). The trend and
seasonality blocks of the full TimeVAE are not built ("small", as the issue asks).

Pre-trained like the diffusion rows on every pre-training domain's windows (no domain label), it is prompted
through its encoder: for TimeDP's protocol each of the k prompt windows is repeated as TimeDP repeats prompts and
each copy decodes a draw from that window's posterior q(z | prompt). Decoded windows are clipped to [-1, 1] under
the centred-PIT normalisation, as the diffusion sampler clips x_0. Written by hand: no maintained PyTorch package
ships TimeVAE.

Batches: ``(x (B, L, 1), domain (B,))``; ``generate(prompts (k, L) normalised, n) -> (n, L)``.
"""

from __future__ import annotations

import zlib

import numpy as np
import pytorch_lightning as pl
import torch
from torch import Tensor, nn

from zoo.errors import ConfigError
from zoo_tasks.timeseries.generation.evaluation import GenerationEvaluation, repeat_prompts


def _halvings(length: int, times: int) -> int:
    for _ in range(times):
        length = (length + 1) // 2
    return length


class TimeVAE(GenerationEvaluation, pl.LightningModule):
    """TimeVAE base (see the module docstring). Shapes: ``encode(x (B, L)) -> (mu (B, D), logvar (B, D))``;
    ``decode(z (B, D)) -> (B, L)``; ``loss(x (B, L)) -> ()``."""

    checkpoint_monitor = "val/loss"
    checkpoint_mode = "min"

    def __init__(
        self,
        seq_len: int | None = None,
        hidden_sizes: tuple[int, ...] = (50, 100, 200),
        latent_dim: int = 8,
        reconstruction_wt: float = 3.0,
        lr: float = 1e-3,
        indomain_prompts: int = 100,
        indomain_samples: int = 1000,
        fewshot_samples: int = 2000,
        eval_seed: int = 0,
        plots: bool = True,
    ):
        super().__init__()
        if seq_len is None:
            raise ConfigError("model.init_args.seq_len is not set (the data's seq_len fills it under `zoo fit`)")
        if not hidden_sizes or latent_dim < 1:
            raise ConfigError("model.init_args.hidden_sizes must be non-empty and latent_dim >= 1")
        self.save_hyperparameters()
        sizes = list(hidden_sizes)
        layers, channels = [], 1
        for size in sizes:
            layers += [nn.Conv1d(channels, size, 3, stride=2, padding=1), nn.ReLU()]
            channels = size
        self.encoder = nn.Sequential(*layers, nn.Flatten())
        self.short = _halvings(seq_len, len(sizes))
        self.to_mu = nn.Linear(sizes[-1] * self.short, latent_dim)
        self.to_logvar = nn.Linear(sizes[-1] * self.short, latent_dim)
        self.from_z = nn.Linear(latent_dim, sizes[-1] * self.short)
        deconv = []
        for size in [*reversed(sizes[:-1]), 1]:
            deconv += [nn.ConvTranspose1d(channels, size, 3, stride=2, padding=1, output_padding=1), nn.ReLU()]
            channels = size
        self.decoder = nn.Sequential(*deconv, nn.Flatten(), nn.Linear(self.short * 2 ** len(sizes), seq_len))

    def encode(self, x: Tensor) -> tuple[Tensor, Tensor]:
        h = self.encoder(x.unsqueeze(1))
        return self.to_mu(h), self.to_logvar(h)

    def decode(self, z: Tensor) -> Tensor:
        return self.decoder(self.from_z(z).view(len(z), self.hparams.hidden_sizes[-1], self.short))

    def loss(self, x: Tensor, generator: torch.Generator | None = None) -> Tensor:
        mu, logvar = self.encode(x)
        eps = torch.randn(mu.shape, device=mu.device, generator=generator)
        recon = self.decode(mu + torch.exp(0.5 * logvar) * eps)
        err = (x - recon).square().sum(1)
        reconstruction = 2 * err  # + the error of the mean over features: the same for one feature
        kl = -0.5 * (1 + logvar - mu.square() - logvar.exp()).sum(1)
        return (self.hparams.reconstruction_wt * reconstruction + kl).mean()

    def training_step(self, batch, batch_idx: int):
        loss = self.loss(batch[0].squeeze(-1))
        self.log("train/loss", loss, prog_bar=True, batch_size=len(batch[0]))
        return loss

    def validation_step(self, batch, batch_idx: int):
        generator = torch.Generator(device=batch[0].device).manual_seed(batch_idx)
        loss = self.loss(batch[0].squeeze(-1), generator)
        self.log("val/loss", loss, prog_bar=True, batch_size=len(batch[0]), sync_dist=True)
        return loss

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr)

    def _bounded(self) -> bool:
        trainer = getattr(self, "_trainer", None)
        dm = getattr(trainer, "datamodule", None) if trainer is not None else None
        return dm is None or getattr(dm, "hparams", {}).get("normalize", "centered_pit") == "centered_pit"

    @torch.no_grad()
    def generate(self, prompts: np.ndarray, n: int, group: str = "") -> np.ndarray:
        """(n, L): each copy of the repeated prompt windows decodes one draw from its posterior."""
        was_training = self.training
        self.eval()
        x = torch.as_tensor(repeat_prompts(np.asarray(prompts, dtype=np.float32), n), device=self.device)
        generator = torch.Generator(device=self.device).manual_seed(
            self.hparams.eval_seed * 7919 + zlib.crc32(group.encode())
        )
        mu, logvar = self.encode(x)
        z = mu + torch.exp(0.5 * logvar) * torch.randn(mu.shape, device=mu.device, generator=generator)
        out = self.decode(z)
        if self._bounded():
            out = out.clamp(-1.0, 1.0)
        self.train(was_training)
        return out.double().cpu().numpy()

    def extra_results(self) -> dict:
        return self.evaluation_results()
