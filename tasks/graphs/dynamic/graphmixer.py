"""GraphMixer (Cong et al., ICLR 2023) as DyGLib implements it (``models/GraphMixer.py``): per node, the K most
recent neighbours' [edge features, fixed cosine time encoding] projected to F_e channels, ``num_layers`` MLP-Mixer
blocks over the K tokens, mean over tokens, concatenated with the node encoding, linear to F_n.

DyGLib's node encoding is the node's features plus a masked average of the features of its last ``time_gap``
(2,000) neighbours. This task's node features are all zero (DyGLib's UCI has none; the CSV loader reads edge
features only), so that average is exactly zero and is not computed. Batch layout: ``data.py`` with
``neighbors: recent``; (B, F_n), (B, F_n) out.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from zoo.errors import ConfigError
from zoo_tasks.graphs.dynamic.model import TimeEncoder


class FeedForward(nn.Module):
    """Linear -> GELU -> dropout -> Linear -> dropout, width ``factor`` x dim. (..., D) -> (..., D)."""

    def __init__(self, dim: int, factor: float, dropout: float):
        super().__init__()
        hidden = int(factor * dim)
        self.net = nn.Sequential(nn.Linear(dim, hidden), nn.GELU(), nn.Dropout(dropout), nn.Linear(hidden, dim),
                                 nn.Dropout(dropout))  # fmt: skip

    def forward(self, x: Tensor) -> Tensor:
        return self.net(x)


class MLPMixer(nn.Module):
    """Token mixing (LN over tokens, 0.5x) then channel mixing (LN over channels, 4x), residual each. (B, K, C)."""

    def __init__(self, tokens: int, channels: int, dropout: float):
        super().__init__()
        self.token_norm, self.token_ff = nn.LayerNorm(tokens), FeedForward(tokens, 0.5, dropout)
        self.channel_norm, self.channel_ff = nn.LayerNorm(channels), FeedForward(channels, 4.0, dropout)

    def forward(self, x: Tensor) -> Tensor:
        x = x + self.token_ff(self.token_norm(x.permute(0, 2, 1))).permute(0, 2, 1)
        return x + self.channel_ff(self.channel_norm(x))


class GraphMixerEncoder(nn.Module):
    """GraphMixer's node encoder for both sides of a pair; same interface as ``DyGFormerEncoder``."""

    def __init__(self, node_dim: int, edge_dim: int, time_dim: int, num_neighbors: int, num_layers: int,
                 dropout: float):  # fmt: skip
        super().__init__()
        self.time_encoder = TimeEncoder(time_dim)
        for p in self.time_encoder.parameters():
            p.requires_grad_(False)  # DyGLib: parameter_requires_grad=False for GraphMixer
        self.proj = nn.Linear(edge_dim + time_dim, edge_dim)
        self.mixers = nn.ModuleList(MLPMixer(num_neighbors, edge_dim, dropout) for _ in range(num_layers))
        self.output = nn.Linear(edge_dim + node_dim, node_dim)

    def node(self, side: dict[str, Tensor]) -> Tensor:
        time = self.time_encoder(side["dt"]).masked_fill(side["pad"].unsqueeze(-1), 0.0)
        x = self.proj(torch.cat([side["edge_feat"], time], dim=-1))
        for mixer in self.mixers:
            x = mixer(x)
        return self.output(torch.cat([x.mean(1), side["node_self"]], dim=1))

    def forward(self, pair: dict) -> tuple[Tensor, Tensor, dict]:
        if pair.get("layout") != "recent":
            raise ConfigError(
                "method graphmixer needs the recent-neighbour batches: set data.init_args.neighbors: recent"
            )
        return self.node(pair["src"]), self.node(pair["dst"]), {}
