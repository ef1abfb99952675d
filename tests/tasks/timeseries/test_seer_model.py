"""SEER network (tasks/timeseries/seer.py): shapes, the learnable patch replacement, the channel-adaptive series
token, the MoE aux loss reaching the training loss, the routing returned as a value, and size checks; PatchTST and
the dense twin share the shape contract."""

from __future__ import annotations

import pytest
import torch

from zoo.errors import ConfigError
from zoo.moe import Routing, routing_summary
from zoo_tasks.timeseries.patchtst import PatchTSTForecaster
from zoo_tasks.timeseries.seer import ChannelAdaptiveSeriesToken, LearnablePatchReplacement, SEERForecaster

SMALL = dict(num_channels=7, d_model=32, n_heads=4, d_ff=64)
DENSE = dict(moe_embedding=False, patch_replacement=False)


@pytest.mark.parametrize(
    "make",
    [
        lambda c, h: SEERForecaster(**{**SMALL, "num_channels": c}, pred_len=h),
        lambda c, h: SEERForecaster(**{**SMALL, "num_channels": c}, pred_len=h, **DENSE),
        lambda c, h: PatchTSTForecaster(**{**SMALL, "num_channels": c}, pred_len=h),
    ],
    ids=["seer", "dense", "patchtst"],
)
@pytest.mark.parametrize("channels,horizon", [(7, 96), (1, 24), (21, 720)])
def test_forecast_shape(make, channels, horizon):
    model = make(channels, horizon)
    for training in (True, False):
        model.train(training)
        assert model(torch.randn(3, 96, channels)).shape == (3, horizon, channels)


def test_wrong_channel_count_is_a_clear_error():
    with pytest.raises(ConfigError, match="num_channels"):
        SEERForecaster(**SMALL)(torch.randn(2, 96, 21))


@pytest.mark.parametrize("model", [SEERForecaster, PatchTSTForecaster])
def test_channels_left_to_the_data_but_not_filled_is_a_clear_error(model):
    with pytest.raises(ConfigError, match=r"model.init_args.num_channels is not set"):
        model(**{**SMALL, "num_channels": None})


@pytest.mark.parametrize("model", [SEERForecaster, PatchTSTForecaster])
def test_channels_stated_give_the_same_model_whatever_the_default(model):
    torch.manual_seed(0)
    stated = model(**SMALL)
    torch.manual_seed(0)
    again = model(**SMALL)  # same RNG draws: the None default changes nothing once the value is stated
    assert stated.state_dict().keys() == again.state_dict().keys()
    for key, value in stated.state_dict().items():
        assert torch.equal(value, again.state_dict()[key]), key


def test_dense_twin_has_no_moe_and_no_replacement_and_about_the_same_size():
    seer = SEERForecaster(num_channels=7)
    dense = SEERForecaster(num_channels=7, moe_embedding=False, patch_replacement=False)
    assert dense.net.embedding.moe is None and dense.net.replacement is None
    n_seer = sum(p.numel() for p in seer.parameters())
    n_dense = sum(p.numel() for p in dense.parameters())
    assert 0.95 < n_dense / n_seer <= 1.0


class TestPatchReplacement:
    def _tokens(self):
        torch.manual_seed(0)
        return torch.randn(5, 9, 16, requires_grad=True)  # (N, 1 + P, D): token 0 is the series token

    def test_tokens_under_threshold_become_the_series_token(self):
        rep = LearnablePatchReplacement(16, threshold=0.5)
        tokens = self._tokens()
        out, keep = rep(tokens)
        score = torch.sigmoid(rep.scorer(tokens[:, 1:])).squeeze(-1)
        assert torch.equal(keep, score > 0.5)
        assert 0 < keep.sum() < keep.numel()  # the random scorer keeps some and replaces some
        series = tokens[:, :1].expand_as(tokens[:, 1:])
        assert torch.equal(out[:, 1:][~keep], series[~keep])  # the forward mask is exactly 0 / 1
        assert torch.equal(out[:, 1:][keep], tokens[:, 1:][keep])

    def test_series_token_is_always_kept(self):
        rep = LearnablePatchReplacement(16, threshold=0.5)
        with torch.no_grad():
            rep.scorer.bias.fill_(-100.0)  # every patch scores ~0: all replaced
        tokens = self._tokens()
        out, keep = rep(tokens)
        assert not keep.any()
        torch.testing.assert_close(out[:, 0], tokens[:, 0])
        torch.testing.assert_close(out, tokens[:, :1].expand_as(tokens))

    def test_gradient_reaches_the_scorer_through_kept_tokens_only(self):
        rep = LearnablePatchReplacement(16, threshold=0.5)
        tokens = self._tokens().requires_grad_(True)
        out, keep = rep(tokens)
        upstream = torch.randn_like(out)
        (out * upstream).sum().backward()
        assert rep.scorer.weight.grad is not None and rep.scorer.weight.grad.abs().sum() > 0
        # reference rule: d out / d score = (z - series) / score on kept tokens, nothing from replaced ones
        patches, series = tokens.detach()[:, 1:], tokens.detach()[:, :1]
        score = torch.sigmoid(rep.scorer(patches)).squeeze(-1).detach()
        d_score = ((patches - series) * upstream[:, 1:]).sum(-1) / score * keep
        d_logit = d_score * score * (1 - score)
        torch.testing.assert_close(rep.scorer.bias.grad, d_logit.sum().reshape(1))

    def test_straight_through_gradient_reaches_every_score(self):
        rep = LearnablePatchReplacement(16, threshold=0.5, gradient="straight_through")
        tokens = self._tokens()
        out, keep = rep(tokens)
        assert torch.equal(out[:, 1:][keep], tokens[:, 1:][keep])  # same forward as the reference rule
        upstream = torch.randn_like(out)
        (out * upstream).sum().backward()
        patches, series = tokens[:, 1:], tokens[:, :1]
        score = torch.sigmoid(rep.scorer(patches)).squeeze(-1).detach()
        d_logit = ((patches - series) * upstream[:, 1:]).sum(-1) * score * (1 - score)
        torch.testing.assert_close(rep.scorer.bias.grad, d_logit.sum().reshape(1))

    def test_unknown_gradient_rule(self):
        with pytest.raises(ConfigError, match="replacement gradient"):
            LearnablePatchReplacement(16, gradient="soft")

    def test_all_replaced_gives_the_scorer_no_gradient_and_no_nan(self):
        rep = LearnablePatchReplacement(16, threshold=0.5)
        with torch.no_grad():
            rep.scorer.bias.fill_(-200.0)  # sigmoid underflows to exactly 0
        out, keep = rep(self._tokens())
        out.sum().backward()
        assert not keep.any() and torch.isfinite(out).all()
        assert torch.equal(rep.scorer.bias.grad, torch.zeros(1))

    def test_threshold_out_of_range(self):
        with pytest.raises(ConfigError):
            LearnablePatchReplacement(16, threshold=1.5)


def test_series_token_samples_in_training_and_averages_in_eval():
    torch.manual_seed(0)
    token = ChannelAdaptiveSeriesToken(seq_len=96, d_model=16, d_score=8)
    x = torch.randn(2, 5, 96)
    token.eval()
    a, b = token(x), token(x)
    assert a.shape == (2, 5, 16)
    torch.testing.assert_close(a, b)  # softmax-weighted summary: deterministic
    token.train()
    draws = torch.stack([token(x) for _ in range(8)])
    assert not torch.allclose(draws[0], draws[1:].mean(0))  # sampled channel summary: stochastic
    # every channel's token depends on the other channels (through the summary)
    x2 = x.clone()
    x2[:, 4] += 1.0
    token.eval()
    assert not torch.allclose(token(x2)[:, 0], a[:, 0])


def test_aux_loss_reaches_the_total_loss_and_the_router():
    x, y = torch.randn(4, 96, 7), torch.randn(4, 96, 7)
    losses = {}
    for weight in (0.0, 1.0):
        torch.manual_seed(0)
        model = SEERForecaster(aux_weight=weight, **SMALL)
        model.train()
        torch.manual_seed(1)
        out = model.training_step((x, y), 0)
        losses[weight] = out["loss"]
        aux = model.net.embedding.moe.aux_loss(out["routing"]["net.embedding.moe"])
    assert aux > 0
    torch.testing.assert_close(losses[1.0] - losses[0.0], aux.detach(), atol=1e-5, rtol=1e-4)
    gate = model.net.embedding.moe.router.gate.weight
    (grad,) = torch.autograd.grad(aux, gate, retain_graph=True)
    assert grad.abs().sum() > 0
    losses[1.0].backward()
    assert gate.grad is not None and gate.grad.abs().sum() > 0


def test_routing_and_diagnostics_are_returned_not_stored():
    model = SEERForecaster(**SMALL)
    model.eval()
    out = model.net(torch.randn(4, 96, 7))
    assert out.diagnostics["patches"] == 4 * 7 * 12
    assert 0 <= out.diagnostics["replaced"] <= out.diagnostics["patches"]
    (name, routing), *_ = out.routing.items()
    assert name == "embedding.moe" and len(out.routing) == 1 and isinstance(routing, Routing)
    assert routing_summary(out.routing).layers[name].tokens == 4 * 7 * 12  # one token per patch
    assert sum(routing_summary(out.routing).layers[name].counts) == 4 * 7 * 12 * 2  # top-2
    assert not [n for n, _ in model.named_buffers() if "routing" in n or "stats" in n]
    assert not hasattr(model.net.embedding.moe, "last_routing") and not hasattr(model.net, "last_stats")
    dense = SEERForecaster(moe_embedding=False, patch_replacement=False, **SMALL).eval().net(torch.randn(2, 96, 7))
    assert dict(dense.routing) == {} and dense.aux_loss is None and dict(dense.diagnostics) == {}


def test_steps_return_the_routing_for_the_stats_callback():
    torch.manual_seed(0)
    model = SEERForecaster(**SMALL)
    batch = (torch.randn(2, 96, 7), torch.randn(2, 96, 7))
    out = model.training_step(batch, 0)
    assert set(out) == {"loss", "routing"} and out["loss"].ndim == 0
    assert list(out["routing"]) == ["net.embedding.moe"]
    model.eval()
    assert list(model.validation_step(batch, 0)["routing"]) == ["net.embedding.moe"]


def test_router_is_a_config_key():
    torch.manual_seed(0)
    default = SEERForecaster(**SMALL)
    assert type(default.net.embedding.moe.router).__name__ == "NoisyTopKRouter"  # the reference's gate
    assert default.hparams.router == "noisy_topk"
    topk = SEERForecaster(router="topk", **SMALL)
    assert type(topk.net.embedding.moe.router).__name__ == "TopKRouter"
    assert not any("noise" in n for n in topk.state_dict())
    with pytest.raises(ConfigError, match="router 'expert_choice' cannot route SEER's patch mixture"):
        SEERForecaster(router="expert_choice", **SMALL)
    with pytest.raises(ConfigError, match="no_such_router"):
        SEERForecaster(router="no_such_router", **SMALL)
    with pytest.raises(ConfigError, match="router_kwargs"):
        SEERForecaster(router="topk", router_kwargs={"bogus": 1}, **SMALL)


def test_state_dict_keys_of_the_recorded_models():
    keys = list(SEERForecaster(**SMALL).state_dict())
    assert keys[:8] == [
        "net.revin.weight", "net.revin.bias", "net.embedding.shared.weight",
        "net.embedding.moe.experts.weight", "net.embedding.moe.experts.bias",
        "net.embedding.moe.router.gate.weight", "net.embedding.moe.router.noise.weight",
        "net.series_token.embed.weight",
    ]  # fmt: skip
    assert "net.causal.0.qkv.weight" in keys and "net.encoder.0.ff.3.bias" in keys and "net.head.linear.weight" in keys
    patchtst = list(PatchTSTForecaster(**SMALL).state_dict())
    assert patchtst[:4] == ["net.pos", "net.revin.weight", "net.revin.bias", "net.embed.weight"]
    assert "net.encoder.1.norm2.norm.running_var" in patchtst


@pytest.mark.parametrize(
    "bad, key",
    [
        (dict(d_model=0), "d_model"),
        (dict(n_heads=-1), "n_heads"),
        (dict(stride=0), "stride"),
        (dict(dropout=1.5), "dropout"),
        (dict(head_dropout=-0.1), "head_dropout"),
        (dict(top_k=9), "top_k"),
        (dict(e_layers=-1), "e_layers"),
        (dict(lr=-1e-3), "lr"),
        (dict(loss="huber"), "loss"),
    ],
)
def test_bad_sizes_are_config_errors_naming_the_key(bad, key):
    with pytest.raises(ConfigError, match=key):
        SEERForecaster(**{**SMALL, **bad})
    if key not in ("top_k", "e_layers", "lr", "loss"):
        with pytest.raises(ConfigError, match=key):
            PatchTSTForecaster(**{**SMALL, **bad})
