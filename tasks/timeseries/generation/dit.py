"""The denoiser: a Diffusion Transformer over patches of a window, conditioned on the diffusion timestep
(adaLN-Zero) and on a domain prompt (cross-attention to TimeDP's prototypes with PAM), whose FFNs are dense
(TimeDP's setting, the dense twin) or a routed mixture (TimeMoDE) with the prompt and the timestep embedding
in the router input. A patch holds ``patch_len`` steps of every channel (``channels`` > 1: multivariate windows);
``prompted=False`` is the unconditional DiT (no cross-attention, router on token + timestep).

Peebles & Xie, "Scalable Diffusion Models with Transformers" (DiT), ICCV 2023, arXiv 2212.09748, Sec. 3.2
(adaLN-Zero blocks, zero-initialised modulation and output); TimeDP (arXiv 2501.05403) for the prompts;
TimeMoDE (ICML 2026; no public code) for routing on prompt + timestep.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from zoo.errors import ConfigError
from zoo.moe import MoE, Routing, require_router
from zoo.nn.transformer import sinusoidal_encoding
from zoo_tasks.timeseries.generation.prompts import pam_bias


def timestep_embedding(t: Tensor, dim: int, max_period: float = 10000.0) -> Tensor:
    """(B, dim) sinusoidal embedding of integer timesteps (DDPM / LDM's ``timestep_embedding``: [cos | sin])."""
    half = dim // 2
    freqs = torch.exp(-math.log(max_period) * torch.arange(half, dtype=torch.float32, device=t.device) / half)
    args = t.float()[:, None] * freqs[None]
    emb = torch.cat([torch.cos(args), torch.sin(args)], dim=-1)
    return F.pad(emb, (0, dim % 2))


def _attention(q: Tensor, k: Tensor, v: Tensor, heads: int, bias: Tensor | None = None) -> Tensor:
    b, s, d = q.shape
    split = lambda z: z.view(b, z.shape[1], heads, d // heads).transpose(1, 2)  # noqa: E731
    out = F.scaled_dot_product_attention(split(q), split(k), split(v), attn_mask=bias)
    return out.transpose(1, 2).reshape(b, s, d)


class DenseFFN(nn.Module):
    """``Linear(d, h) -> GELU -> Linear(h, d)``; returns ``(y, None)`` like a mixture without a routing."""

    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(dim, hidden), nn.GELU(), nn.Linear(hidden, dim))

    def forward(self, x: Tensor, condition: Tensor | None = None) -> tuple[Tensor, None]:
        return self.net(x), None


class DiTBlock(nn.Module):
    """adaLN-Zero self-attention, PAM cross-attention to the prototypes (``cross=True``), adaLN-Zero FFN (dense or
    MoE).

    Shapes: ``forward(x (B, S, d), c (B, d), context (B, n, latent_dim) | None, bias (B, n) | None,
    route (B, r) | None) -> (x (B, S, d), Routing | None)``; context and bias are None without cross-attention.
    """

    def __init__(self, d_model: int, n_heads: int, latent_dim: int, ffn: nn.Module, cross: bool = True):
        super().__init__()
        if d_model % n_heads:
            raise ConfigError(f"d_model {d_model} is not divisible by n_heads {n_heads}")
        self.heads = n_heads
        self.norm1 = nn.LayerNorm(d_model, elementwise_affine=False, eps=1e-6)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.cross = cross
        if cross:
            self.norm_cross = nn.LayerNorm(d_model)
            self.q_cross = nn.Linear(d_model, d_model)
            self.kv_cross = nn.Linear(latent_dim, 2 * d_model)
            self.proj_cross = nn.Linear(d_model, d_model)
        self.norm2 = nn.LayerNorm(d_model, elementwise_affine=False, eps=1e-6)
        self.ffn = ffn
        self.modulation = nn.Sequential(nn.SiLU(), nn.Linear(d_model, 6 * d_model))
        nn.init.zeros_(self.modulation[1].weight)
        nn.init.zeros_(self.modulation[1].bias)

    def forward(
        self, x: Tensor, c: Tensor, context: Tensor | None, bias: Tensor | None, route: Tensor | None
    ) -> tuple[Tensor, Routing | None]:
        shift1, scale1, gate1, shift2, scale2, gate2 = self.modulation(c).unsqueeze(1).chunk(6, dim=-1)
        h = self.norm1(x) * (1 + scale1) + shift1
        q, k, v = self.qkv(h).chunk(3, dim=-1)
        x = x + gate1 * self.proj(_attention(q, k, v, self.heads))
        if self.cross:
            k, v = self.kv_cross(context).chunk(2, dim=-1)
            attn_bias = pam_bias(bias)[:, None, None, :]  # (B, 1, 1, n): every head, every query
            x = x + self.proj_cross(_attention(self.q_cross(self.norm_cross(x)), k, v, self.heads, attn_bias))
        h = self.norm2(x) * (1 + scale2) + shift2
        y, routing = self.ffn(h, condition=route) if route is not None else self.ffn(h)
        return x + gate2 * y, routing


def check_shapes(seq_len: int | None, channels: int | None) -> None:
    """Raise a ConfigError naming a window shape left to the data (None) that nothing filled."""
    if seq_len is None:
        raise ConfigError("model.init_args.seq_len is not set (the data's seq_len fills it under `zoo fit`)")
    if channels is None:
        raise ConfigError("model.init_args.channels is not set (the data's channels fill it under `zoo fit`)")


class DiTDenoiser(nn.Module):
    """eps-prediction DiT over non-overlapping patches of a window of ``channels`` series.

    Args:
        seq_len, patch_len: window length L and patch length p (S = L / p tokens); ``None`` is the data's (``zoo fit``
            fills it from the datamodule's ``model_shapes()``).
        d_model, depth, n_heads: transformer sizes.
        ffn_hidden: the dense FFN width; each MoE expert has ``ffn_hidden // top_k`` (equal active width).
        moe: routed FFNs (TimeMoDE) or dense ones (the dense twin, TimeDP's setting).
        num_experts, top_k, router, router_kwargs, aux_weights: the mixture (``zoo.moe.MoE``).
        router_prompt, router_timestep: join the domain prompt (normalised assignment logits) and the
            timestep embedding to the router input (the ablations switch one off).
        num_latents, latent_dim: TimeDP's prototype pool.
        channels: C, the series per window; a token embeds ``patch_len`` x C values and the head gives them back
            (C = 1: the univariate DiT of TimeDP's protocol).
        prompted: cross-attend to the prototypes weighted by a domain prompt; False makes it unconditional (DiT's
            blocks conditioned on the timestep alone: no cross-attention, no prototypes, router on token +
            timestep), for single-dataset generation such as Diffusion-TS's protocol.

    Shapes: ``forward(x_t (B, L, C), t (B,), prompt (B, num_latents) | None, latents (n, latent_dim) | None)
    -> (eps (B, L, C), {layer: Routing})``; prompt and latents are None when ``prompted=False``.
    """

    def __init__(
        self,
        seq_len: int | None = None,
        patch_len: int = 4,
        d_model: int = 64,
        depth: int = 4,
        n_heads: int = 4,
        ffn_hidden: int = 256,
        moe: bool = True,
        num_experts: int = 8,
        top_k: int = 2,
        router: str = "topk",
        router_kwargs: dict[str, Any] | None = None,
        aux_weights: dict[str, float] | None = None,
        router_prompt: bool = True,
        router_timestep: bool = True,
        num_latents: int = 16,
        latent_dim: int = 32,
        channels: int | None = 1,
        prompted: bool = True,
    ):
        super().__init__()
        check_shapes(seq_len, channels)
        if seq_len % patch_len:
            raise ConfigError(f"seq_len {seq_len} is not divisible by patch_len {patch_len}")
        if channels < 1:
            raise ConfigError(f"model.init_args.channels must be >= 1, got {channels}")
        self.seq_len, self.patch_len, self.d_model, self.channels = seq_len, patch_len, d_model, channels
        self.moe, self.prompted = moe, prompted
        self.router_prompt, self.router_timestep = router_prompt and moe and prompted, router_timestep and moe
        self.patch_embed = nn.Linear(patch_len * channels, d_model)
        self.register_buffer("pos", sinusoidal_encoding(seq_len // patch_len, d_model), persistent=False)
        self.time_mlp = nn.Sequential(nn.Linear(d_model, d_model), nn.SiLU(), nn.Linear(d_model, d_model))
        condition_dim = num_latents * self.router_prompt + d_model * self.router_timestep
        if moe:
            require_router(router, "TimeMoDE's token FFN mixture (one sample's denoising must not depend on the batch)")
            if ffn_hidden % top_k:
                raise ConfigError(f"ffn_hidden {ffn_hidden} is not divisible by top_k {top_k} (equal active width)")
        blocks = []
        for _ in range(depth):
            ffn = (
                MoE(
                    d_model,
                    ffn_hidden // top_k,
                    num_experts,
                    top_k=top_k,
                    router=router,
                    condition_dim=condition_dim,
                    aux_weights=aux_weights,
                    router_kwargs=router_kwargs,
                )
                if moe
                else DenseFFN(d_model, ffn_hidden)
            )
            blocks.append(DiTBlock(d_model, n_heads, latent_dim, ffn, cross=prompted))
        self.blocks = nn.ModuleList(blocks)
        if prompted:
            self.null_context = nn.Parameter(torch.randn(1, latent_dim))
        self.final_norm = nn.LayerNorm(d_model, elementwise_affine=False, eps=1e-6)
        self.final_modulation = nn.Sequential(nn.SiLU(), nn.Linear(d_model, 2 * d_model))
        self.out = nn.Linear(d_model, patch_len * channels)
        for layer in (self.final_modulation[1], self.out):
            nn.init.zeros_(layer.weight)
            nn.init.zeros_(layer.bias)

    def route_condition(self, prompt: Tensor | None, c: Tensor) -> Tensor | None:
        parts = []
        if self.router_prompt:
            parts.append(F.layer_norm(prompt, prompt.shape[-1:]))
        if self.router_timestep:
            parts.append(F.layer_norm(c, c.shape[-1:]))
        return torch.cat(parts, dim=-1) if parts else None

    def forward(
        self,
        x: Tensor,
        t: Tensor,
        prompt: Tensor | None = None,
        latents: Tensor | None = None,
        cond_drop_prob: float = 0.0,
    ) -> tuple[Tensor, dict[str, Routing]]:
        b = x.shape[0]
        # a token is patch_len consecutive steps of every channel, step-major: (B, L, C) -> (B, L / p, p * C)
        tokens = self.patch_embed(x.reshape(b, -1, self.patch_len * self.channels)) + self.pos
        c = self.time_mlp(timestep_embedding(t, self.d_model))
        context = None
        if self.prompted:
            context = latents.unsqueeze(0).expand(b, -1, -1)
            if cond_drop_prob > 0:  # TimeDP: each prototype of a sample replaced by a learned null vector
                keep = torch.rand(b, context.shape[1], 1, device=x.device) >= cond_drop_prob
                context = torch.where(keep, context, self.null_context.expand_as(context))
        route = self.route_condition(prompt, c)
        routings: dict[str, Routing] = {}
        for i, block in enumerate(self.blocks):
            tokens, routing = block(tokens, c, context, prompt, route)
            if routing is not None:
                routings[f"blocks.{i}.ffn"] = routing
        shift, scale = self.final_modulation(c).unsqueeze(1).chunk(2, dim=-1)
        out = self.out(self.final_norm(tokens) * (1 + scale) + shift)
        return out.reshape(b, self.seq_len, self.channels), routings
