"""Export the TimeDP parity fixture from the authors' code (microsoft/TimeCraft, ``TimeDP/``).

Three parts, numbers only, to ``tests/fixtures/parity/timedp.pt``:

1. prompt bank: ``DomainUnifiedPrototyper`` (``ldm/modules/encoders/modules.py``; orthogonal prototype pool and the
   conv encoder giving each window's prototype-assignment logits) in train mode on random windows; objective
   ``sum(m * R)``, its gradients and one SGD step (lr 0.1; BatchNorm statistics included; plain SGD because the
   convolutions' biases sit before train-mode BatchNorms: their gradient is 0 up to round-off, which Adam would
   turn into a full lr-sized step of random sign);
2. PAM: ``CrossAttention(use_pam=True)`` (``ldm/modules/attention.py``) as ``BasicTransformerBlock`` applies it,
   ``x + attn(LayerNorm(x), context=prototypes, mask=m)``, with one prompt row whose logits are all <= 0 (every
   prototype masked); objective ``sum(y * R)``, gradients, one Adam step;
3. diffusion schedule: ``DDPM.register_schedule`` (``ldm/models/diffusion/ddpm_time.py``) for TimeDP's linear
   schedule (5e-4 .. 0.1, T = 200, ``configs/multi_domain_timedp.yaml``) and the cosine one, and ``q_sample``,
   ``predict_start_from_noise``, ``q_posterior`` on random inputs.

    python scripts/parity/export_timedp.py --upstream /tmp/upstream/timecraft --commit SHA \\
        --out tests/fixtures/parity/timedp.pt

``ddpm_time.py`` imports ``rank_zero_only`` from ``pytorch_lightning.utilities.distributed`` (removed from
Lightning); that import is stubbed. The schedule methods run unbound on a plain ``nn.Module`` holding what they
read (``v_posterior`` 0, eps parameterisation), so no denoiser or autoencoder is built.
"""

from __future__ import annotations

import sys
import types

import torch
from fixture_io import exporter_args
from torch import nn

PROMPT = {"batch": 6, "channels": 2, "window": 16, "dim": 8, "num_latents": 6, "latent_dim": 8}
PAM = {"batch": 3, "tokens": 5, "query_dim": 16, "heads": 2, "dim_head": 8}
SCHEDULES = {"linear": {"timesteps": 200, "linear_start": 5e-4, "linear_end": 0.1}, "cosine": {"timesteps": 200}}
SEED, LR, SGD_LR = 0, 1e-2, 0.1


def step(module: nn.Module, objective: torch.Tensor, optimizer_cls, lr: float) -> dict[str, torch.Tensor]:
    """Backward + one optimiser step; returns the gradients."""
    optimizer = optimizer_cls(module.parameters(), lr=lr)
    optimizer.zero_grad()
    objective.backward()
    grads = {k: p.grad.detach().clone() for k, p in module.named_parameters() if p.grad is not None}
    optimizer.step()
    return grads


def export_prompt_bank(modules, gen: torch.Generator) -> dict:
    c = PROMPT
    torch.manual_seed(SEED)
    net = modules.DomainUnifiedPrototyper(
        dim=c["dim"], window=c["window"], num_latents=c["num_latents"], num_channels=c["channels"],
        latent_dim=c["latent_dim"], bn=True,
    ).train()  # fmt: skip
    x = torch.randn(c["batch"], c["channels"], c["window"], generator=gen)
    r = torch.randn(c["batch"], c["num_latents"], generator=gen)
    state = {k: v.clone() for k, v in net.state_dict().items()}
    latents, m = net(x)
    objective = (m * r).sum()
    grads = step(net, objective, torch.optim.SGD, SGD_LR)
    return {
        "inputs": {"x": x, "r": r},
        "state": state,
        "outputs": {"latents": latents.detach(), "m": m.detach()},
        "loss": objective.detach(),
        "grads": grads,
        "after_step": {k: v.clone() for k, v in net.state_dict().items()},
    }


def export_pam(attention, gen: torch.Generator, latents: torch.Tensor) -> dict:
    c = PAM
    torch.manual_seed(SEED + 1)
    n, d_latent = latents.shape
    module = nn.ModuleDict(
        {
            "norm": nn.LayerNorm(c["query_dim"]),
            "attn": attention.CrossAttention(
                c["query_dim"], context_dim=d_latent, heads=c["heads"], dim_head=c["dim_head"], use_pam=True
            ),
        }
    )
    with torch.no_grad():
        module["norm"].weight.add_(0.1 * torch.randn(c["query_dim"], generator=gen))
        module["norm"].bias.add_(0.1 * torch.randn(c["query_dim"], generator=gen))
    x = torch.randn(c["batch"], c["tokens"], c["query_dim"], generator=gen)
    m = torch.randn(c["batch"], n, generator=gen)
    m[-1] = -m[-1].abs() - 0.1  # the last prompt masks every prototype
    context = latents.expand(c["batch"], n, d_latent).contiguous()
    r = torch.randn(c["batch"], c["tokens"], c["query_dim"], generator=gen)
    state = {k: v.clone() for k, v in module.state_dict().items()}
    y = module["attn"](module["norm"](x), context=context, mask=m) + x  # BasicTransformerBlock's attn2 line
    objective = (y[:-1] * r[:-1]).sum()  # the all-masked row is pinned, not compared
    grads = step(module, objective, torch.optim.Adam, LR)
    return {
        "inputs": {"x": x, "m": m, "context": context, "r": r},
        "state": state,
        "outputs": {"y": y.detach()},
        "loss": objective.detach(),
        "grads": grads,
        "after_step": {k: v.clone() for k, v in module.state_dict().items()},
    }


def export_schedules(ddpm_cls, gen: torch.Generator) -> dict:
    out = {}
    for name, kwargs in SCHEDULES.items():
        holder = nn.Module()
        holder.v_posterior, holder.parameterization = 0.0, "eps"
        ddpm_cls.register_schedule(holder, beta_schedule=name, **kwargs)
        buffers = {k: v.clone() for k, v in holder.named_buffers()}
        x0 = torch.randn(4, 8, 2, generator=gen)
        noise = torch.randn(4, 8, 2, generator=gen)
        t = torch.tensor([0, 1, 57, kwargs["timesteps"] - 1])
        xt = ddpm_cls.q_sample(holder, x0, t, noise)
        mean, var, log_var = ddpm_cls.q_posterior(holder, x0, xt, t)
        out[name] = {
            "config": kwargs,
            "buffers": buffers,
            "inputs": {"x0": x0, "noise": noise, "t": t},
            "outputs": {
                "q_sample": xt,
                "predict_start_from_noise": ddpm_cls.predict_start_from_noise(holder, xt, t, noise),
                "posterior_mean": mean,
                "posterior_variance": var,
                "posterior_log_variance_clipped": log_var,
            },
        }
    return out


def main() -> None:
    args = exporter_args(__doc__.splitlines()[0], "microsoft/TimeCraft")
    sys.path.insert(0, str(args.upstream / "TimeDP"))
    sys.modules["pytorch_lightning.utilities.distributed"] = types.SimpleNamespace(rank_zero_only=lambda f: f)
    import ldm.modules.attention as attention
    import ldm.modules.encoders.modules as modules
    from ldm.models.diffusion.ddpm_time import DDPM

    gen = torch.Generator().manual_seed(SEED)
    prompt = export_prompt_bank(modules, gen)
    pam = export_pam(attention, gen, prompt["state"]["latents"])
    fixture = {
        "meta": {
            "upstream": "microsoft/TimeCraft",
            "commit": args.commit,
            "call": (
                "TimeDP/ldm/modules/encoders/modules.py DomainUnifiedPrototyper(dim, window, num_latents, "
                "num_channels, latent_dim, bn=True)(x) -> (latents, m), train mode, objective sum(m * R), SGD(sgd_lr); "
                "ldm/modules/attention.py CrossAttention(query_dim, context_dim, heads, dim_head, use_pam=True): "
                "y = attn(LayerNorm(x), context, mask=m) + x, objective sum(y[:-1] * R[:-1]), Adam(lr); "
                "ldm/models/diffusion/ddpm_time.py DDPM.register_schedule / q_sample / predict_start_from_noise / "
                "q_posterior (unbound, v_posterior=0)"
            ),
            "config": {
                "prompt": PROMPT,
                "pam": PAM,
                "schedules": SCHEDULES,
                "seed": SEED,
                "optimizer": "Adam",
                "lr": LR,
                "prompt_optimizer": "SGD",
                "sgd_lr": SGD_LR,
            },
            "exported_with": {"torch": str(torch.__version__)},
        },
        "prompt": prompt,
        "pam": pam,
        "schedule": export_schedules(DDPM, gen),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    torch.save(fixture, args.out)
    print(f"wrote {args.out} ({args.out.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
