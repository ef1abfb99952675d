"""TimeMoDE's DiT over multivariate windows (``channels``) and unconditional (``prompted=False``): shapes, the patch
layout, no prompt machinery left behind, and ``channels=1`` giving exactly the univariate model it was before."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader

from zoo.errors import ConfigError
from zoo_tasks.timeseries.generation.module import TimeMoDE
from zoo_tasks.timeseries.generation.multivariate_data import MultivariateWindowsDataModule

TINY = dict(seq_len=8, patch_len=4, d_model=16, depth=2, n_heads=2, ffn_hidden=32, num_experts=4, top_k=2)
TINY.update(num_latents=4, latent_dim=8, prompt_dim=4, timesteps=10, plots=False)
UNCONDITIONAL = dict(TINY, channels=3, prompted=False, sample_steps=3)


def _perturbed(model: TimeMoDE) -> TimeMoDE:
    """Every weight moved off its initial value (the zero-initialised heads would hide the patch layout)."""
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.1 * torch.randn(p.shape, generator=g))
    return model.eval()


@pytest.mark.parametrize(
    ("moe", "loss", "total", "first"),
    [  # computed with the univariate code before `channels` and `prompted` existed (commit 1480048)
        (True, 0.9278970956802368, 3.5918378606438637, -0.6545277833938599),
        (False, 0.8302121162414551, 7.429386345669627, -1.0),
    ],
)
def test_one_channel_is_the_univariate_model_it_was(moe, loss, total, first):
    torch.manual_seed(0)
    model = _perturbed(TimeMoDE(moe=moe, sample_steps=4, **TINY))
    assert len(model.state_dict()) == (75 if moe else 73) and model.net.patch_embed.weight.shape == (16, 4)
    x = torch.linspace(-1, 1, 6 * 8).reshape(6, 8, 1)
    with torch.no_grad():
        value, _ = model.loss_and_routing((x, None), torch.Generator().manual_seed(1))
    out = model.generate(np.linspace(-1, 1, 3 * 8).reshape(3, 8), 5, "g")
    assert value.item() == pytest.approx(loss, rel=1e-5)
    assert out.shape == (5, 8) and float(out.sum()) == pytest.approx(total, rel=1e-5)
    assert float(out[0, 0]) == pytest.approx(first, rel=1e-5)


@pytest.mark.parametrize("moe", [True, False])
def test_multichannel_shapes_and_token_layout(moe):
    torch.manual_seed(0)
    model = _perturbed(TimeMoDE(moe=moe, channels=3, **TINY))
    net = model.net
    assert net.patch_embed.weight.shape == (16, 4 * 3) and net.out.weight.shape == (4 * 3, 16)
    assert model.prompter.encoder[0].in_channels == 3  # a prompted multivariate model encodes every channel
    x = torch.randn(5, 8, 3)
    eps, routings = net(x, torch.arange(5), model.prompter(x), model.prompter.latents)
    assert eps.shape == (5, 8, 3) and len(routings) == (2 if moe else 0)
    # token i holds steps 4i .. 4i + 3 of every channel, step-major
    patches = torch.stack([x[:, 4 * i : 4 * i + 4, :].reshape(5, 12) for i in range(2)], dim=1)
    tokens = net.patch_embed(x.reshape(5, 2, 12))
    assert torch.equal(tokens, net.patch_embed(patches))
    loss, _ = model.loss_and_routing((x, torch.zeros(5, dtype=torch.long)))
    assert loss.ndim == 0 and torch.isfinite(loss)


def test_unconditional_model_has_no_prompt_machinery_and_routes_on_token_and_timestep():
    torch.manual_seed(0)
    model = TimeMoDE(**UNCONDITIONAL)
    names = [n for n, _ in model.named_parameters()]
    assert model.prompter is None and not any("cross" in n or "null_context" in n or "prompter" in n for n in names)
    assert model.net.blocks[0].ffn.router.gate.weight.shape == (4, 16 + 16)  # token | timestep embedding
    loss, routings = model.loss_and_routing((torch.rand(6, 8, 3) * 2 - 1, torch.zeros(6, dtype=torch.long)))
    assert torch.isfinite(loss) and sorted(routings) == ["net.blocks.0.ffn", "net.blocks.1.ffn"]
    loss.backward()
    assert all(p.grad is not None for p in model.parameters() if p.requires_grad)


def test_unconditional_sampling_is_seeded_clipped_and_batched():
    torch.manual_seed(0)
    model = TimeMoDE(eval_batch=4, **UNCONDITIONAL)
    a, b = model.sample_windows(10, "etth"), model.sample_windows(10, "etth")
    assert a.shape == (10, 8, 3) and np.array_equal(a, b) and np.abs(a).max() <= 1.0 + 1e-6
    assert not np.array_equal(a, model.sample_windows(10, "other"))
    assert model.expert_load.counts["etth"].sum() == 2 * (10 * 2 * 2) * 2 * 3  # calls x tokens x k x layers x steps


def test_each_protocol_refuses_the_other_kind_of_model():
    with pytest.raises(ConfigError, match="prompts the generator: this model has model.init_args.prompted false"):
        TimeMoDE(**UNCONDITIONAL).generate(np.zeros((2, 8)), 4)
    with pytest.raises(ConfigError, match="generates unconditionally: set model.init_args.prompted false"):
        TimeMoDE(channels=3, **TINY).sample_windows(4)
    with pytest.raises(ConfigError, match="model.init_args.channels is not set"):
        TimeMoDE(**{**TINY, "channels": None})
    with pytest.raises(ConfigError, match="channels must be >= 1, got 0"):
        TimeMoDE(**{**TINY, "channels": 0})
    with pytest.raises(ConfigError, match="metric_repeats must be >= 1, got 0"):
        TimeMoDE(metric_repeats=0, **TINY)
    with pytest.raises(ConfigError, match=r"metric_iterations \['fid'\]: the keys are disc, pred, cfid"):
        TimeMoDE(metric_iterations={"fid": 3}, **TINY)


class _Trainer:
    def __init__(self, datamodule):
        self.datamodule = datamodule


def test_setup_refuses_a_prompted_model_on_multivariate_windows_before_training(tmp_path):
    csv = tmp_path / "s.csv"
    csv.write_text("date,a,b,c\n" + "".join(f"{i},{i % 5},{i % 3},{i % 7}\n" for i in range(20)))
    dm = MultivariateWindowsDataModule(path=str(csv), seq_len=8, batch_size=4)
    model = TimeMoDE(channels=3, **TINY)
    model._trainer = _Trainer(dm)
    with pytest.raises(ConfigError, match="Diffusion-TS's unconditional protocol: set model.init_args.prompted false"):
        model.setup("fit")
    unconditional = TimeMoDE(**UNCONDITIONAL)
    unconditional._trainer = _Trainer(dm)
    unconditional.setup("fit")  # accepted
    unconditional._trainer = _Trainer(type("Corpus", (), {})())
    with pytest.raises(ConfigError, match="TimeDP's prompted univariate protocol"):
        unconditional.setup("fit")
    assert isinstance(dm.test_dataloader(), DataLoader)
