"""TimeMoDE's DiT, prompts, router inputs, generation, the dense twin, the bootstrap floor and a learning check."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from zoo.errors import ConfigError
from zoo.moe import MoE
from zoo_tasks.timeseries.generation.bootstrap import PromptBootstrap
from zoo_tasks.timeseries.generation.dit import DenseFFN, _attention
from zoo_tasks.timeseries.generation.evaluation import repeat_prompts
from zoo_tasks.timeseries.generation.metrics import mdd
from zoo_tasks.timeseries.generation.module import TimeMoDE
from zoo_tasks.timeseries.generation.prompts import DomainPrompter, pam_bias

TINY = dict(seq_len=8, patch_len=4, d_model=16, depth=2, n_heads=2, ffn_hidden=32, num_experts=4, top_k=2)
TINY.update(num_latents=4, latent_dim=8, prompt_dim=4, timesteps=10, plots=False)


def _batch(b=6, length=8):
    return torch.rand(b, length, 1) * 2 - 1, torch.zeros(b, dtype=torch.long)


def test_steps_return_loss_and_one_routing_per_mixture_layer_and_none_for_the_dense_twin():
    torch.manual_seed(0)
    moe = TimeMoDE(**TINY)
    out = moe.training_step(_batch(), 0)
    assert out["loss"].ndim == 0 and sorted(out["routing"]) == ["net.blocks.0.ffn", "net.blocks.1.ffn"]
    dense = TimeMoDE(moe=False, **TINY)
    assert dense.training_step(_batch(), 0)["routing"] == {}
    assert all(isinstance(b.ffn, DenseFFN) for b in dense.net.blocks)


def test_validation_loss_uses_the_same_draws_every_time():
    torch.manual_seed(0)
    model = TimeMoDE(**TINY).eval()
    batch = _batch()
    with torch.no_grad():
        first = model.validation_step(batch, 3)["loss"]
        torch.randn(10)  # the global RNG moves on; validation does not care
        assert torch.equal(first, model.validation_step(batch, 3)["loss"])
        assert not torch.equal(first, model.validation_step(batch, 4)["loss"])


def test_dense_twin_has_equal_active_width_and_the_router_sees_prompt_and_timestep():
    moe, dense = TimeMoDE(**TINY), TimeMoDE(moe=False, **TINY)
    layer: MoE = moe.net.blocks[0].ffn
    assert layer.hidden * layer.top_k == dense.net.blocks[0].ffn.net[0].out_features == 32
    d, n = TINY["d_model"], TINY["num_latents"]
    assert layer.router.gate.weight.shape == (4, d + n + d)  # token | prompt | timestep embedding
    assert TimeMoDE(router_prompt=False, **TINY).net.blocks[0].ffn.router.gate.weight.shape == (4, d + d)
    assert TimeMoDE(router_timestep=False, **TINY).net.blocks[0].ffn.router.gate.weight.shape == (4, d + n)
    plain = TimeMoDE(router_prompt=False, router_timestep=False, **TINY)
    assert plain.net.blocks[0].ffn.router.gate.weight.shape == (4, d)


def test_route_condition_carries_the_prompt_and_the_timestep():
    net = TimeMoDE(**TINY).net
    prompt, c = torch.randn(3, 4), torch.randn(3, 16)
    cond = net.route_condition(prompt, c)
    assert torch.allclose(cond[:, :4], torch.nn.functional.layer_norm(prompt, (4,)))
    assert torch.allclose(cond[:, 4:], torch.nn.functional.layer_norm(c, (16,)))
    assert TimeMoDE(router_prompt=False, router_timestep=False, **TINY).net.route_condition(prompt, c) is None


def test_pam_attends_only_to_prototypes_with_a_positive_assignment():
    q, kv = torch.randn(2, 3, 8), torch.randn(2, 4, 8)
    m = torch.tensor([[-1.0, 2.0, -0.5, 0.0], [0.3, -2.0, -1.0, -3.0]])
    out = _attention(q, kv, kv, heads=1, bias=pam_bias(m)[:, None, None, :])
    assert torch.allclose(out[0], kv[0, 1].expand(3, 8), atol=1e-5)  # only prototype 1 has m > 0
    assert torch.allclose(out[1], kv[1, 0].expand(3, 8), atol=1e-5)
    everything_masked = _attention(q, kv, kv, heads=1, bias=pam_bias(-torch.ones(2, 4))[:, None, None, :])
    assert torch.isfinite(everything_masked).all()


def test_prompter_shapes_and_frozen_orthogonal_prototypes():
    p = DomainPrompter(window=8, dim=4, num_latents=4, latent_dim=8)
    assert p(torch.randn(5, 8, 1)).shape == (5, 4) and not p.latents.requires_grad
    assert torch.allclose(p.latents @ p.latents.T, torch.eye(4), atol=1e-5)
    with pytest.raises(ConfigError, match="divisible by 4, got seq_len=10"):
        DomainPrompter(window=10)


def test_generate_is_deterministic_per_group_clipped_and_counts_expert_load():
    torch.manual_seed(0)
    model = TimeMoDE(sample_steps=4, **TINY)
    prompts = np.random.default_rng(0).uniform(-1, 1, size=(3, 8))
    a, b = model.generate(prompts, 7, "x"), model.generate(prompts, 7, "x")
    assert a.shape == (7, 8) and np.array_equal(a, b) and np.abs(a).max() <= 1.0 + 1e-6
    assert not np.array_equal(a, model.generate(prompts, 7, "y"))
    counts = model.expert_load.counts["x"]
    assert counts.shape == (4, 4) and counts.sum() == 2 * (7 * 2 * 2) * 2 * 4  # calls x tokens x k x layers x steps


def test_finetuning_mode_adapts_then_restores_the_pretrained_weights_even_under_inference_mode():
    torch.manual_seed(0)
    model = TimeMoDE(sample_steps=3, finetune_steps=3, finetune_lr=1e-2, **TINY).eval()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    prompts = np.random.default_rng(1).uniform(-1, 1, size=(3, 8))
    with torch.inference_mode():  # as in Lightning's test loop
        plain = model.generate(prompts, 5, "c")
        tuned = model.generate_finetuned(prompts, 5, "c")
        again = model.generate(prompts, 5, "c")
    assert not np.allclose(plain, tuned) and np.array_equal(plain, again)
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items()) and not model.training
    assert model.finetunes() and not TimeMoDE(**TINY).finetunes()


def test_repeat_prompts_is_timedp_zero_shot_k_repeat():
    p = np.arange(3)[:, None] * np.ones((3, 2))
    assert repeat_prompts(p, 8)[:, 0].tolist() == [0, 0, 1, 1, 2, 2, 0, 1]


def test_bootstrap_copies_prompts_with_the_requested_noise():
    prompts = np.random.default_rng(0).normal(size=(4, 8))
    assert np.array_equal(PromptBootstrap(seq_len=8, noise=0.0).generate(prompts, 8), repeat_prompts(prompts, 8))
    noisy = PromptBootstrap(seq_len=8, noise=0.1).generate(prompts, 4000)
    assert np.std(noisy - repeat_prompts(prompts, 4000)) == pytest.approx(0.1 * prompts.std(), rel=0.05)


def test_config_errors_name_the_key():
    with pytest.raises(ConfigError, match="model.init_args.seq_len is not set"):
        TimeMoDE()
    with pytest.raises(ConfigError, match="loss 'huber'; choose one of l1, l2"):
        TimeMoDE(**{**TINY, "loss": "huber"})
    with pytest.raises(ConfigError, match="seq_len 8 is not divisible by patch_len 3"):
        TimeMoDE(**{**TINY, "patch_len": 3})


def test_a_short_training_run_lowers_the_loss_and_beats_the_untrained_model_on_mdd():
    """Windows of a narrow random walk around 0.5; 100 Adam steps on the tiny DiT (100 diffusion steps, sampled
    on 8): the trained model's per-step marginals are closer to the data's than the untrained model's."""
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    data = 0.5 + 0.05 * np.cumsum(rng.normal(size=(256, 8)), axis=1)
    x = torch.tensor(data, dtype=torch.float32).unsqueeze(-1)
    model = TimeMoDE(sample_steps=8, **{**TINY, "timesteps": 100, "cond_drop_prob": 0.0})
    untrained = model.generate(data[:16], 200, "check")
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    losses = []
    for _ in range(100):
        idx = torch.randint(0, 256, (32,))
        loss, _ = model.loss_and_routing((x[idx], None))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert np.mean(losses[-20:]) < 0.8 * np.mean(losses[:20])
    trained = model.generate(data[:16], 200, "check")
    assert mdd(data, trained) < mdd(data, untrained)
