"""SEER: robust patch-Transformer forecasting with an MoE-augmented embedding and learnable patch replacement.

Paper: Qiu et al., "SEER: Transformer-based Robust Time Series Forecasting via Automated Patch Enhancement and
Replacement", ICML 2026, arXiv 2602.00589 (Sec. 3: Augmented Embedding Module, Learnable Patch Replacement
Module); reference code: decisionintelligence/SEER (TFB harness). The dense twin is the same network with
``moe_embedding=False, patch_replacement=False``.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from zoo.errors import ConfigError
from zoo.moe import MoE, Routing, require_router
from zoo.nn.revin import RevIN
from zoo.nn.transformer import EncoderLayer, sinusoidal_encoding
from zoo_tasks.timeseries.forecaster import (
    Forecast,
    Forecaster,
    check_from_data,
    check_positive,
    check_probability,
)
from zoo_tasks.timeseries.patching import FlattenHead, check_window, num_patches, patchify

MIXTURE = "SEER's patch mixture"


class AugmentedPatchEmbedding(nn.Module):
    """SEER's Augmented Embedding of patches: ``MoE(patch) + W patch + PE``.

    The MoE routes every patch (channel-independent) to ``top_k`` of ``num_experts`` linear pattern-extractor
    experts ``patch_len -> d_model`` with ``router`` (the reference's noisy top-k gating, Shazeer et al. 2017,
    arXiv 1701.06538, by default; any router in ``zoo.moe.ROUTERS`` whose choice for a patch depends on that
    patch alone, so a forecast never depends on the other series of its batch). Its importance / load cv² loss
    (weight ``aux_weight``) comes from :meth:`zoo.moe.MoE.aux_loss`. ``W`` is a shared linear projection and PE
    the fixed sinusoidal position encoding. With ``moe=False`` this is the plain linear patch embedding of the
    dense twin.

    Shapes: patches (N, P, patch_len) -> (tokens (N, P, d_model), Routing over the N * P patches, or None).
    """

    def __init__(
        self,
        patch_len: int,
        d_model: int,
        num_patches: int,
        num_experts: int = 8,
        top_k: int = 2,
        aux_weight: float = 1.0,
        moe: bool = True,
        router: str = "noisy_topk",
        router_kwargs: dict | None = None,
    ):
        super().__init__()
        self.shared = nn.Linear(patch_len, d_model, bias=False)
        self.moe = None
        if moe:
            require_router(router, MIXTURE, needs=("per_token_choice",))
            self.moe = MoE(
                patch_len,
                d_model,
                num_experts,
                top_k=top_k,
                router=router,
                experts="linear",
                out_dim=d_model,
                aux_weights={"cv_squared": aux_weight},
                router_kwargs=router_kwargs,
            )
        self.register_buffer("pe", sinusoidal_encoding(num_patches, d_model), persistent=False)

    def forward(self, patches: Tensor) -> tuple[Tensor, Routing | None]:
        tokens = self.shared(patches) + self.pe
        if self.moe is None:
            return tokens, None
        mixed, routing = self.moe(patches)
        return tokens + mixed, routing


class ChannelAdaptiveSeriesToken(nn.Module):
    """SEER's series-wise token: one global token per channel, built from that channel's whole lookback and
    a score summary of all channels.

    Each channel is embedded (``Linear(seq_len, d_model)``) and scored (``d_score`` scores, an MLP). Across
    channels the scores are combined per score dimension: in training one channel is *sampled* with
    probability softmax(scores) over channels; in evaluation the scores are *softmax-weighted* over channels.
    The summary is concatenated to each channel's embedding and mapped by an MLP to the token.
    (The reference also feeds the calendar features as extra channels; here only the series' own channels.)

    Shapes: x (B, C, seq_len) -> tokens (B, C, d_model).
    """

    def __init__(self, seq_len: int, d_model: int, d_score: int = 32, dropout: float = 0.0):
        super().__init__()
        self.embed = nn.Linear(seq_len, d_model, bias=False)
        self.score = nn.Sequential(nn.Linear(d_model, d_model), nn.GELU(), nn.Linear(d_model, d_score))
        self.mix = nn.Sequential(nn.Linear(d_model + d_score, d_model), nn.GELU(), nn.Linear(d_model, d_model))
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: Tensor) -> Tensor:
        b, c, _ = x.shape
        emb = self.dropout(self.embed(x))
        scores = self.score(emb)  # (B, C, S)
        weights = torch.softmax(scores, dim=1)
        if self.training:
            picked = torch.multinomial(weights.transpose(1, 2).reshape(-1, c), 1)  # (B*S, 1) channel per score
            summary = scores.gather(1, picked.view(b, 1, -1))
        else:
            summary = (scores * weights).sum(dim=1, keepdim=True)
        return self.mix(torch.cat([emb, summary.expand(b, c, -1)], dim=-1))


class LearnablePatchReplacement(nn.Module):
    """SEER's Learnable Patch Replacement: score each patch token ``s = sigmoid(w . z + b)``; tokens with
    ``s <= threshold`` are replaced by the series token (position 0, always kept).

    The keep mask ``m`` is hard (exactly 0 / 1) in the forward pass. Its gradient (``gradient``):
    - ``"reference"`` (decisionintelligence/SEER): ``m = s / stop_grad(s)`` on kept tokens, ``m = 0`` on replaced
      ones, so the scorer learns through kept tokens only (``d out / d s = (z - series_token) / s``); a replaced
      token passes no gradient to its score.
    - ``"straight_through"``: ``m = hard + s - stop_grad(s)``, every patch's score gets ``z - series_token``.

    Shapes: tokens (N, 1 + P, D) -> (replaced tokens (N, 1 + P, D), keep (N, P) bool for the patches).
    """

    GRADIENTS = ("reference", "straight_through")

    def __init__(self, d_model: int, threshold: float = 0.5, gradient: str = "reference"):
        super().__init__()
        if not 0.0 <= threshold < 1.0:
            raise ConfigError(f"score_threshold must be in [0, 1), got {threshold}")
        if gradient not in self.GRADIENTS:
            raise ConfigError(f"unknown replacement gradient {gradient!r}; choose one of {', '.join(self.GRADIENTS)}")
        self.scorer = nn.Linear(d_model, 1)
        self.threshold, self.gradient = threshold, gradient

    def forward(self, tokens: Tensor) -> tuple[Tensor, Tensor]:
        series, patches = tokens[:, :1], tokens[:, 1:]
        score = torch.sigmoid(self.scorer(patches))  # (N, P, 1)
        keep = score > self.threshold
        if self.gradient == "reference":
            # 1 where kept (d/ds = 1/s), 0 where replaced; the safe denominator keeps a score of exactly 0 from
            # turning the (unused) gradient of the replaced branch into NaN.
            mask = torch.where(keep, score / torch.where(keep, score.detach(), torch.ones_like(score)), 0.0)
        else:
            mask = keep.to(score.dtype) + (score - score.detach())
        patches = patches * mask + series * (1.0 - mask)
        return torch.cat([series, patches], dim=1), keep.squeeze(-1)


class SEERNet(nn.Module):
    """The SEER network (channel-independent patch Transformer).

    RevIN -> patching (``patch_len``, ``stride``, end-padded by ``stride``) -> Augmented Embedding (MoE +
    shared linear + PE) -> prepend the channel-adaptive series token -> Learnable Patch Replacement -> one
    causal-attention encoder layer -> ``e_layers`` full-attention layers -> linear down-projection
    ``d_model -> d_model * head_scaling`` -> flatten + linear head -> RevIN⁻¹.

    Shapes: x (B, seq_len, C) -> :class:`~zoo_tasks.timeseries.forecaster.Forecast` with the forecast
    (B, pred_len, C), the MoE's routing over the B * C * P patches (``"embedding.moe"``), its weighted aux loss,
    and the replaced / total patch counts (``diagnostics``: ``replaced``, ``patches``).
    """

    def __init__(
        self,
        seq_len: int = 96,
        pred_len: int = 96,
        num_channels: int | None = None,
        d_model: int = 256,
        n_heads: int = 16,
        d_ff: int = 512,
        e_layers: int = 1,
        patch_len: int = 16,
        stride: int = 8,
        num_experts: int = 8,
        top_k: int = 2,
        d_score: int = 32,
        score_threshold: float = 0.5,
        aux_weight: float = 1.0,
        dropout: float = 0.0,
        head_dropout: float = 0.1,
        head_scaling: float = 0.5,
        moe_embedding: bool = True,
        patch_replacement: bool = True,
        replacement_gradient: str = "reference",
        router: str = "noisy_topk",
        router_kwargs: dict | None = None,
    ):
        super().__init__()
        check_from_data(num_channels=num_channels)
        check_positive(
            seq_len=seq_len, pred_len=pred_len, num_channels=num_channels, d_model=d_model, n_heads=n_heads,
            d_ff=d_ff, patch_len=patch_len, stride=stride, d_score=d_score, head_scaling=head_scaling,
            num_experts=num_experts, top_k=top_k,
        )  # fmt: skip
        check_probability(dropout=dropout, head_dropout=head_dropout)
        if e_layers < 0:
            raise ConfigError(f"model.init_args.e_layers must be >= 0, got {e_layers}")
        if moe_embedding and top_k > num_experts:
            raise ConfigError(f"model.init_args.top_k {top_k} is more than num_experts {num_experts}")
        self.seq_len, self.pred_len, self.num_channels = seq_len, pred_len, num_channels
        self.patch_len, self.stride = patch_len, stride
        n_patches = num_patches(seq_len, patch_len, stride)
        self.revin = RevIN(num_channels)
        self.embedding = AugmentedPatchEmbedding(
            patch_len, d_model, n_patches, num_experts, top_k, aux_weight, moe_embedding, router, router_kwargs
        )
        self.series_token = ChannelAdaptiveSeriesToken(seq_len, d_model, d_score, dropout)
        self.replacement = (
            LearnablePatchReplacement(d_model, score_threshold, replacement_gradient) if patch_replacement else None
        )
        self.causal = nn.Sequential(EncoderLayer(d_model, n_heads, d_ff, dropout, causal=True), nn.LayerNorm(d_model))
        self.encoder = nn.Sequential(
            *[EncoderLayer(d_model, n_heads, d_ff, dropout) for _ in range(e_layers)], nn.LayerNorm(d_model)
        )
        head_dim = max(1, int(d_model * head_scaling))
        self.down = nn.Linear(d_model, head_dim, bias=False) if head_dim != d_model else nn.Identity()
        self.head = FlattenHead(n_patches + 1, head_dim, pred_len, head_dropout)

    def forward(self, x: Tensor) -> Forecast:
        check_window(x, self.seq_len, self.num_channels)
        b, length, c = x.shape
        x, stats = self.revin.normalize(x)
        x = x.transpose(1, 2)  # (B, C, L)
        patches = patchify(x.reshape(b * c, length), self.patch_len, self.stride)
        series = self.series_token(x).reshape(b * c, 1, -1)
        embedded, routing = self.embedding(patches)
        tokens = torch.cat([series, embedded], dim=1)
        diagnostics: dict[str, Tensor] = {}
        if self.replacement is not None:
            tokens, keep = self.replacement(tokens)
            diagnostics["replaced"] = (~keep).sum().detach()
            diagnostics["patches"] = torch.tensor(keep.numel())
        tokens = self.encoder(self.causal(tokens))
        out = self.head(self.down(tokens)).view(b, c, self.pred_len).transpose(1, 2)
        forecast = self.revin.denormalize(out, stats)
        if routing is None:
            return Forecast(forecast, diagnostics=diagnostics)
        aux = self.embedding.moe.aux_loss(routing)
        return Forecast(forecast, {"embedding.moe": routing}, aux, diagnostics)


class SEERForecaster(Forecaster):
    """LightningModule for SEER (ICML 2026) and its dense twin (``moe_embedding=False,
    patch_replacement=False``: plain linear patch embedding, no replacement, same encoder).

    Batches are (x (B, seq_len, C), y (B, pred_len, C)); reference settings for ETTh1: d_model 256,
    d_ff 512, 16 heads, 1 causal + 1 full layer, 8 experts top-2, patch 16 stride 8, threshold 0.5, MAE loss,
    lr 1e-4. ``router`` / ``router_kwargs`` choose the patch mixture's router (default the reference's
    ``"noisy_topk"``; ``"expert_choice"`` does not apply, see :class:`AugmentedPatchEmbedding`). See
    :class:`SEERNet`, whose arguments this model takes as its own, beside the loss, optimiser, early-stopping and
    corruption settings of :class:`~zoo_tasks.timeseries.forecaster.Forecaster`. ``num_channels=None`` (the
    default) is the data's: ``zoo fit`` fills it from ``ForecastingDataModule.model_shapes()``.
    """

    def build_network(self, **network) -> SEERNet:
        return SEERNet(**network)
