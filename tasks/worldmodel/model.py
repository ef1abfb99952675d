"""WestWorld (system-aware MoE trajectory world model) and its ablations as one network.

WestWorld (arXiv 2603.14392; code 511205787/WestWorld, ``models/WestWorld/westworld.py``): every observation and
action scalar of a robot is a variate token; a block is

1. attention across the observation variates of a time step (structural mask: a token sees the tokens of bodies
   within ``mask_hops`` edges of its own in the kinematic tree), then observation <- action cross-attention
   (same mask), then an FFN;
2. the Sys-MoE layer along time, per observation variate: a learnable system (CLS) token is appended to the
   variate's sequence, Mamba runs over it, and the CLS state gates a dense mixture of ``num_experts`` FFN experts
   (``dim -> ffn_hidden -> dim``, GELU) for every time step of the sequence; the CLS state is carried to the next
   block. The gate is a `zoo.moe` router over one token per (sample, variate) and the experts are combined with
   ``zoo.moe.combine_dense``.

The structural embedding adds, per token, embeddings of its body's pre-order, mirrored pre-order, post-order and
depth in the MJCF body tree, and of its kind (qpos / qvel / action). Action tokens are context only (not updated
by the blocks), as in the reference.

Shapes: ``forward(inputs (B, T, M, K) soft bins, obs_dim Do, ...) -> logits (B, T, Do, K)`` and a dict of
`Routing` (one per block, over B * Do tokens).

Variants (``moe`` / ``structure`` / ``temporal``): the dense twin (one FFN of the mixture's active width, no CLS),
the no-structure ablation (no structural embedding, no mask) and the TrajWorld-like model (no Sys-MoE, no
structure, causal attention along time instead of Mamba).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from zoo.moe import Routing, combine_dense, make_router, require_router
from zoo_tasks.worldmodel.ssm import MambaMixer

MIXTURE = "WestWorld's system gate (one gate per trajectory variate, from its system token)"


class MaskedAttention(nn.Module):
    """Multi-head attention (b, Lq, d) x (b, Lk, d) -> (b, Lq, d) with a bool ``allow`` (Lq, Lk) mask; a query that
    may attend to no key gets a zero output (not the uniform average a large negative bias would give)."""

    def __init__(self, dim: int, heads: int, dropout: float):
        super().__init__()
        self.heads = heads
        self.q, self.k, self.v, self.o = (nn.Linear(dim, dim) for _ in range(4))
        self.drop = nn.Dropout(dropout)

    def forward(self, xq: Tensor, xk: Tensor, allow: Tensor | None = None, causal: bool = False) -> Tensor:
        b, lq, d = xq.shape
        lk, h = xk.shape[1], self.heads
        q = self.q(xq).view(b, lq, h, d // h).transpose(1, 2)
        k = self.k(xk).view(b, lk, h, d // h).transpose(1, 2)
        v = self.v(xk).view(b, lk, h, d // h).transpose(1, 2)
        scores = q @ k.transpose(-1, -2) / math.sqrt(d // h)
        if causal:
            allow = torch.ones(lq, lk, dtype=torch.bool, device=xq.device).tril()
        if allow is not None:
            scores = scores.masked_fill(~allow, float("-inf"))
        attn = torch.softmax(scores, dim=-1)
        if allow is not None:
            attn = torch.where(allow.any(-1, keepdim=True), attn, torch.zeros_like(attn))
        out = (self.drop(attn) @ v).transpose(1, 2).reshape(b, lq, d)
        return self.o(out)


class SysMoE(nn.Module):
    """The temporal layer: [tokens | CLS] -> Mamba (or causal attention) -> CLS-gated dense FFN mixture.

    x (S, T, d) sequences (S = B * Do variates), cls (S, 1, d) -> (S, T, d), cls_out (S, 1, d), `Routing` over S
    tokens. With ``moe=False`` one FFN of hidden ``dense_hidden`` replaces the mixture and no CLS is used.
    """

    def __init__(
        self,
        dim: int,
        ffn_hidden: int,
        num_experts: int,
        moe: bool,
        temporal: str,
        d_state: int,
        heads: int,
        dropout: float,
        router: str,
        router_kwargs: dict | None,
        top_k: int,
        dense_hidden: int,
    ):
        super().__init__()
        self.moe, self.temporal = moe, temporal
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.mixer = MambaMixer(dim, d_state) if temporal == "mamba" else MaskedAttention(dim, heads, dropout)
        if moe:
            self.cls = nn.Parameter(torch.randn(1, 1, dim) * 0.02)
            require_router(router, MIXTURE, needs=("per_token_choice",))
            self.router = make_router(router, dim, num_experts, top_k=top_k, **(router_kwargs or {}))
            self.fc1 = nn.Parameter(torch.randn(num_experts, dim, ffn_hidden) / math.sqrt(dim))
            self.b1 = nn.Parameter(torch.zeros(num_experts, 1, ffn_hidden))
            self.fc2 = nn.Parameter(torch.randn(num_experts, ffn_hidden, dim) / math.sqrt(ffn_hidden))
            self.b2 = nn.Parameter(torch.zeros(num_experts, 1, dim))
        else:
            self.ffn = nn.Sequential(nn.Linear(dim, dense_hidden), nn.GELU(), nn.Linear(dense_hidden, dim))
        self.out_norm, self.cls_norm = nn.LayerNorm(dim), nn.LayerNorm(dim)

    def _mix(self, h: Tensor) -> Tensor:
        return self.mixer(h) if self.temporal == "mamba" else self.mixer(h, h, causal=True)

    def forward(self, x: Tensor, cls: Tensor | None) -> tuple[Tensor, Tensor | None, Routing | None]:
        s, t, d = x.shape
        if not self.moe:
            h = self.norm1(x)
            h = h + self._mix(h)
            return self.out_norm(h + self.ffn(h)), None, None
        cls = self.cls.expand(s, 1, d) if cls is None else cls
        h = self.norm1(torch.cat([x, cls], dim=1))
        h = h + self._mix(h)
        tokens, cls_state = h[:, :-1], h[:, -1:]
        routing = self.router(self.norm2(cls_state).squeeze(1))  # one gate per variate sequence
        hidden = F.gelu(torch.einsum("std,edh->seth", tokens, self.fc1) + self.b1)  # every expert runs
        experts = torch.einsum("seth,ehd->setd", hidden, self.fc2) + self.b2  # (S, E, T, d)
        tokens = tokens + combine_dense(experts, routing)
        return self.out_norm(tokens), self.cls_norm(cls_state), routing


class Block(nn.Module):
    """Variate attention (structural mask) + obs <- action cross-attention + FFN, then `SysMoE` along time."""

    def __init__(self, dim: int, heads: int, dropout: float, temporal_layer: SysMoE):
        super().__init__()
        self.self_attn, self.cross_attn = MaskedAttention(dim, heads, dropout), MaskedAttention(dim, heads, dropout)
        self.ln_self, self.ln_cross, self.ln_ffn = nn.LayerNorm(dim), nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.ffn = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim), nn.Dropout(dropout))
        self.temporal = temporal_layer

    def forward(self, obs: Tensor, act: Tensor, mask_oo: Tensor | None, mask_oa: Tensor | None, cls: Tensor | None):
        b, t, do, d = obs.shape
        o = obs.reshape(b * t, do, d)
        a = act.reshape(b * t, act.shape[2], d)
        o = self.ln_self(o + self.self_attn(o, o, mask_oo))
        if a.shape[1]:
            o = self.ln_cross(o + self.cross_attn(o, a, mask_oa))
        o = self.ln_ffn(o + self.ffn(o))
        seq = o.view(b, t, do, d).permute(0, 2, 1, 3).reshape(b * do, t, d)
        seq, cls, routing = self.temporal(seq, cls)
        return seq.view(b, do, t, d).permute(0, 2, 1, 3), cls, routing


class WestWorldNet(nn.Module):
    """The world model network (see the module docstring); ``struct`` (M, 5) long: body pre / mirror / post /
    depth index and token kind (0 qpos, 1 qvel, 2 action); ``dist`` (M, M) tree distance between token bodies."""

    def __init__(
        self,
        bins: int = 256,
        dim: int = 32,
        blocks: int = 2,
        heads: int = 4,
        num_experts: int = 4,
        ffn_hidden: int = 64,
        d_state: int = 16,
        moe: bool = True,
        structure: bool = True,
        temporal: str = "mamba",
        mask_hops: int = 2,
        router: str = "soft",
        router_kwargs: dict | None = None,
        top_k: int = 1,
        dropout: float = 0.0,
        max_len: int = 512,
        max_variates: int = 64,
        max_bodies: int = 64,
    ):
        super().__init__()
        self.structure, self.mask_hops = structure, mask_hops
        self.value = nn.Linear(bins, dim, bias=False)
        with torch.no_grad():  # neighbouring bins start with similar embeddings (Fourier features of the bin index)
            pos = torch.linspace(-1, 1, bins)[None, :]
            freq = torch.arange(1, dim // 2 + 1, dtype=torch.float32)[:, None] * math.pi / 2
            self.value.weight.copy_(torch.cat([torch.sin(freq * pos), torch.cos(freq * pos)])[:dim])
        self.obs_act = nn.Embedding(2, dim)
        self.time = nn.Embedding(max_len, dim)
        self.variate = nn.Embedding(max_variates, dim)
        self.query = nn.Parameter(torch.randn(dim) * 0.02)  # replaces unobserved (future) observations
        if structure:
            part = dim // 4
            self.tree = nn.ModuleList(nn.Embedding(max_bodies, part) for _ in range(3))
            self.depth = nn.Embedding(max_bodies, dim - 3 * part)
            self.kind = nn.Embedding(3, dim)
        active = num_experts if not getattr(_router_cls(router), "sparse", True) else top_k
        self.blocks = nn.ModuleList(
            Block(
                dim,
                heads,
                dropout,
                SysMoE(
                    dim,
                    ffn_hidden,
                    num_experts,
                    moe,
                    temporal,
                    d_state,
                    heads,
                    dropout,
                    router,
                    router_kwargs,
                    top_k,
                    dense_hidden=ffn_hidden * active,
                ),
            )  # fmt: skip
            for _ in range(blocks)
        )
        self.head = nn.Linear(dim, bins)

    def structural_embedding(self, struct: Tensor) -> Tensor:
        """(M, 5) indices -> (M, dim)."""
        tree = torch.cat([emb(struct[:, i]) for i, emb in enumerate(self.tree)] + [self.depth(struct[:, 3])], -1)
        return tree + self.kind(struct[:, 4])

    def masks(self, dist: Tensor, obs_dim: int) -> tuple[Tensor | None, Tensor | None]:
        """Structural attention masks from the token-body tree distance: (Do, Do) and (Do, Da) bool."""
        if not self.structure or self.mask_hops < 0:
            return None, None
        allow = dist <= self.mask_hops
        return allow[:obs_dim, :obs_dim], allow[:obs_dim, obs_dim:]

    def forward(
        self, inputs: Tensor, obs_dim: int, prefix: int, struct: Tensor | None = None, dist: Tensor | None = None
    ) -> tuple[Tensor, dict[str, Routing]]:
        b, t, m, _ = inputs.shape
        h = self.value(inputs)
        is_obs = torch.arange(m, device=h.device) < obs_dim
        future = torch.arange(t, device=h.device) >= prefix
        hide = (future[:, None] & is_obs[None, :])[None, :, :, None]
        h = torch.where(hide, self.query.expand_as(h), h)
        h = h + self.obs_act((~is_obs).long())[None, None] + self.time.weight[:t, None] + self.variate.weight[:m]
        mask_oo = mask_oa = None
        if self.structure:
            h = h + self.structural_embedding(struct)[None, None]
            mask_oo, mask_oa = self.masks(dist, obs_dim)
        obs, act = h[:, :, :obs_dim], h[:, :, obs_dim:]
        cls, routings = None, {}
        for i, block in enumerate(self.blocks):
            obs, cls, routing = block(obs, act, mask_oo, mask_oa, cls)
            if routing is not None:
                routings[f"block{i}"] = routing
        return self.head(obs), routings


def _router_cls(name: str):
    from zoo.moe import ROUTERS

    return ROUTERS.get(name)
