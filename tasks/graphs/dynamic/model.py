"""DyGFormer (Yu et al., NeurIPS 2023, DyGLib ``models/DyGFormer.py``) and DyGMoCE (ICML 2026): the same encoder
with a mixture of curvature experts in every attention and feed-forward module.

Encoder, per pair (B pairs; L_s / L_d padded first-hop sequences of the source / destination, see
``neighbors.py``): four channels per sequence entry (node features, edge features, cosine time encoding of the
time gap, neighbour co-occurrence encoding), each projected to C, patched (patch size P), stacked to 4C, the two
sequences concatenated (B, (L_s + L_d) / P, 4C), ``num_layers`` pre-LN blocks, mean over each side's patches,
a linear output to F_n: (B, F_n), (B, F_n). Link score: DyGLib's ``MergeLayer`` (F_n + F_n -> F_n -> 1).

Blocks:
- ``"dygformer"``: DyGLib's ``TransformerEncoder`` (``nn.MultiheadAttention`` + GELU FFN 4x, no padding mask);
- ``"curvature"``: attention and FFN each a dense mixture of E curvature experts (``riemann.py``), expert e on a
  κ_e-stereographic manifold (learnable, initialised evenly over [-κ_max, κ_max]), weighted per token by a
  ``zoo.moe`` router (``combine_dense``). E = 1 with κ fixed at 0 is the dense Euclidean twin.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor, nn

from zoo.moe import Routing, combine_dense, make_router
from zoo_tasks.graphs.dynamic.riemann import CurvatureAttention, CurvatureFFN

BLOCKS = ("dygformer", "curvature")


class TimeEncoder(nn.Module):
    """DyGLib's time encoder: ``cos(w * dt + b)``, w initialised to ``10 ** -linspace(0, 9, d)``, b = 0.
    dt (B, L) -> (B, L, d)."""

    def __init__(self, dim: int):
        super().__init__()
        self.w = nn.Linear(1, dim)
        self.w.weight = nn.Parameter(torch.from_numpy(1 / 10 ** np.linspace(0, 9, dim, dtype=np.float32)).view(dim, 1))
        self.w.bias = nn.Parameter(torch.zeros(dim))

    def forward(self, dt: Tensor) -> Tensor:
        return torch.cos(self.w(dt.unsqueeze(-1)))


class DyGFormerBlock(nn.Module):
    """DyGLib's ``TransformerEncoder``: x + MHA(LN(x)); x + FFN(LN(x)) with GELU, 4x width. (B, N, D) -> (B, N, D)."""

    def __init__(self, dim: int, heads: int, dropout: float):
        super().__init__()
        self.attention = nn.MultiheadAttention(dim, heads, dropout=dropout, batch_first=True)
        self.dropout = nn.Dropout(dropout)
        self.fc1, self.fc2 = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)

    def forward(self, x: Tensor) -> tuple[Tensor, dict[str, Routing]]:
        h = self.norm1(x)
        x = x + self.dropout(self.attention(h, h, h, need_weights=False)[0])
        x = x + self.dropout(self.fc2(self.dropout(nn.functional.gelu(self.fc1(self.norm2(x))))))
        return x, {}


def spread_curvatures(num_experts: int, max_abs: float) -> list[float]:
    """Initial curvatures evenly over [-max_abs, max_abs] (E = 1: [0.0]); odd E includes 0."""
    if num_experts == 1:
        return [0.0]
    return [float(c) for c in np.linspace(-max_abs, max_abs, num_experts)]


class CurvatureMoEBlock(nn.Module):
    """Pre-LN block whose attention and FFN are dense mixtures of curvature experts. (B, N, D) -> (B, N, D) and
    ``{"attention": Routing, "ffn": Routing}`` over the B*N tokens (empty for a single expert)."""

    def __init__(
        self,
        dim: int,
        heads: int,
        dropout: float,
        curvatures: list[float],
        learn_curvature: bool,
        attention_impl: str,
        router: str,
        router_kwargs: dict | None,
        top_k: int,
        ffn_mult: int = 4,
    ):
        super().__init__()
        e = len(curvatures)
        self.attention_experts = nn.ModuleList(
            CurvatureAttention(dim, heads, c, learn_curvature, attention_impl, dropout) for c in curvatures
        )
        self.ffn_experts = nn.ModuleList(CurvatureFFN(dim, ffn_mult * dim, c, learn_curvature) for c in curvatures)
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.dropout = nn.Dropout(dropout)
        self.routers = nn.ModuleDict()
        if e > 1:
            for part in ("attention", "ffn"):
                self.routers[part] = make_router(
                    router, dim, e, top_k=min(top_k, e), mixture=f"DyGMoCE {part} experts",
                    needs=("per_token_choice",), **(router_kwargs or {}),
                )  # fmt: skip

    def curvatures(self, part: str) -> Tensor:
        experts = self.attention_experts if part == "attention" else self.ffn_experts
        return torch.stack([ex.curvature for ex in experts])

    def _mix(self, part: str, experts: nn.ModuleList, h: Tensor) -> tuple[Tensor, Routing | None]:
        if len(experts) == 1:
            return experts[0](h), None
        b, n, d = h.shape
        outs = torch.stack([ex(h) for ex in experts], dim=2).reshape(b * n, len(experts), d)
        routing = self.routers[part](h.reshape(b * n, d))
        return combine_dense(outs, routing).view(b, n, d), routing

    def forward(self, x: Tensor) -> tuple[Tensor, dict[str, Routing]]:
        routings = {}
        y, r = self._mix("attention", self.attention_experts, self.norm1(x))
        x = x + self.dropout(y)
        if r is not None:
            routings["attention"] = r
        y, r = self._mix("ffn", self.ffn_experts, self.norm2(x))
        x = x + self.dropout(y)
        if r is not None:
            routings["ffn"] = r
        return x, routings


class DyGFormerEncoder(nn.Module):
    """DyGFormer's encoder with a choice of block (see the module docstring). ``pair`` is a batch pair dict
    (``data.py``); returns (src (B, F_n), dst (B, F_n), routings by ``"block<i>.<part>"``)."""

    def __init__(
        self,
        node_dim: int,
        edge_dim: int,
        time_dim: int = 100,
        channel_dim: int = 50,
        patch_size: int = 1,
        num_layers: int = 2,
        heads: int = 2,
        dropout: float = 0.1,
        block: str = "dygformer",
        num_experts: int = 3,
        max_abs_curvature: float = 1.0,
        learn_curvature: bool = True,
        attention_impl: str = "fast",
        router: str = "soft",
        router_kwargs: dict | None = None,
        top_k: int = 2,
    ):
        super().__init__()
        self.patch_size = patch_size
        self.time_encoder = TimeEncoder(time_dim)
        self.cooc = nn.Sequential(nn.Linear(1, channel_dim), nn.ReLU(), nn.Linear(channel_dim, channel_dim))
        self.proj = nn.ModuleDict(
            {
                "node": nn.Linear(patch_size * node_dim, channel_dim),
                "edge": nn.Linear(patch_size * edge_dim, channel_dim),
                "time": nn.Linear(patch_size * time_dim, channel_dim),
                "cooc": nn.Linear(patch_size * channel_dim, channel_dim),
            }
        )
        dim = 4 * channel_dim
        if block == "dygformer":
            self.blocks = nn.ModuleList(DyGFormerBlock(dim, heads, dropout) for _ in range(num_layers))
        else:
            curv = spread_curvatures(num_experts, max_abs_curvature)
            self.blocks = nn.ModuleList(
                CurvatureMoEBlock(
                    dim,
                    heads,
                    dropout,
                    curv,
                    learn_curvature and num_experts > 1,
                    attention_impl,
                    router,
                    router_kwargs,
                    top_k,
                )  # fmt: skip
                for _ in range(num_layers)
            )
        self.output = nn.Linear(dim, node_dim)

    def _channels(self, side: dict[str, Tensor]) -> Tensor:
        pad = side["pad"]
        time = self.time_encoder(side["dt"]).masked_fill(pad.unsqueeze(-1), 0.0)
        cooc = self.cooc(side["counts"].unsqueeze(-1)).sum(2)
        b, length = pad.shape
        n, p = length // self.patch_size, self.patch_size
        parts = {"node": side["node_feat"], "edge": side["edge_feat"], "time": time, "cooc": cooc}
        chans = [self.proj[k](v.reshape(b, n, p * v.shape[-1])) for k, v in parts.items()]
        return torch.stack(chans, dim=2).reshape(b, n, -1)

    def forward(self, pair: dict) -> tuple[Tensor, Tensor, dict[str, Routing]]:
        src, dst = self._channels(pair["src"]), self._channels(pair["dst"])
        x = torch.cat([src, dst], dim=1)
        routings = {}
        for i, block in enumerate(self.blocks):
            x, r = block(x)
            routings.update({f"block{i}.{k}": v for k, v in r.items()})
        ns = src.shape[1]
        return self.output(x[:, :ns].mean(1)), self.output(x[:, ns:].mean(1)), routings


class MergeLayer(nn.Module):
    """DyGLib's link predictor: fc2(relu(fc1([a, b]))). (B, F), (B, F) -> (B,) logits."""

    def __init__(self, dim: int):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(2 * dim, dim), nn.Linear(dim, 1)

    def forward(self, a: Tensor, b: Tensor) -> Tensor:
        return self.fc2(torch.relu(self.fc1(torch.cat([a, b], dim=1)))).squeeze(-1)
