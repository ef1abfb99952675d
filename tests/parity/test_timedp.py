"""Parity of our TimeDP parts with the authors' code (microsoft/TimeCraft ``TimeDP/``), fixture from
``scripts/parity/export_timedp.py``:

* prompt bank: ``zoo_tasks.timeseries.generation.prompts.DomainPrompter`` vs ``DomainUnifiedPrototyper``
  (prototype pool and assignment logits m; train-mode BatchNorm, gradients, one SGD step with running stats);
* PAM: the cross-attention of our ``dit.DiTBlock`` (its adaLN-Zero modulation at init, so the block is
  ``x + cross(x)``) vs ``CrossAttention(use_pam=True)`` applied as ``x + attn(LayerNorm(x), prototypes, mask=m)``.
  Our query / key / value projections have biases the reference's lack: they are zero here and their gradients
  have no counterpart. A prompt whose logits are all <= 0 masks every prototype: the reference's ``-finfo.max``
  bias then swamps the logits and attends uniformly, ours (``pam_bias``, -1e4) keeps ``softmax(sim + m)``: pinned;
* diffusion schedule: ``diffusion.GaussianDiffusion`` vs ``DDPM.register_schedule`` (linear 5e-4 .. 0.1 and cosine,
  T = 200), ``q_sample``, ``predict_start_from_noise`` and ``q_posterior``. At t = 0 the posterior variance is 0:
  the reference clips its log at log(1e-20), ours uses t = 1's value (improved DDPM's clipping); pinned. Neither
  sampler reads it at t = 0 (no noise is added at the last step).
"""

from __future__ import annotations

import pytest
import torch

from zoo_tasks.timeseries.generation.diffusion import GaussianDiffusion
from zoo_tasks.timeseries.generation.dit import DenseFFN, DiTBlock
from zoo_tasks.timeseries.generation.prompts import DomainPrompter

FIXTURE = "timedp"
PROMPT_NAMES = {
    "share_encoder.0.": "encoder.0.",
    "share_encoder.1.": "encoder.1.",
    "share_encoder.3.": "encoder.3.",
    "share_encoder.4.": "encoder.4.",
    "mask_ffn.0.": "encoder.6.",
    "mask_ffn.2.": "encoder.8.",
    "latents": "latents",
}


def prompt_state(up: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """``DomainUnifiedPrototyper`` entries -> ``DomainPrompter`` entries (same modules, one Sequential)."""
    out = {}
    for key, value in up.items():
        prefix = next(p for p in PROMPT_NAMES if key.startswith(p))
        out[PROMPT_NAMES[prefix] + key.removeprefix(prefix)] = value
    return out


def by_module(ours: dict[str, torch.Tensor], theirs: dict[str, torch.Tensor]) -> dict[str, tuple]:
    """Pair ours and theirs per module (weight, bias, ... flattened and concatenated). A convolution's bias before a
    train-mode BatchNorm has a gradient of 0 up to round-off; it is compared relative to its module's largest."""
    groups: dict[str, tuple[list, list]] = {}
    for name, value in theirs.items():
        module = name.rsplit(".", 1)[0] if "." in name else name
        mine, their = groups.setdefault(module, ([], []))
        mine.append(ours[name].flatten().double())
        their.append(value.flatten().double())
    return {k: (torch.cat(a), torch.cat(b)) for k, (a, b) in groups.items()}


def pam_state(up: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Reference LayerNorm + ``CrossAttention`` entries -> our ``DiTBlock`` cross-attention entries (weights only)."""
    return {
        "norm_cross.weight": up["norm.weight"],
        "norm_cross.bias": up["norm.bias"],
        "q_cross.weight": up["attn.to_q.weight"],
        "kv_cross.weight": torch.cat([up["attn.to_k.weight"], up["attn.to_v.weight"]]),
        "proj_cross.weight": up["attn.to_out.0.weight"],
        "proj_cross.bias": up["attn.to_out.0.bias"],
    }


def build_prompter(fx: dict) -> DomainPrompter:
    c = fx["meta"]["config"]["prompt"]
    net = DomainPrompter(c["window"], c["channels"], c["dim"], c["num_latents"], c["latent_dim"])
    net.load_state_dict(prompt_state(fx["prompt"]["state"]))
    return net.train()


def build_block(fx: dict) -> DiTBlock:
    c = fx["meta"]["config"]["pam"]
    d, latent_dim = c["query_dim"], fx["pam"]["inputs"]["context"].shape[-1]
    block = DiTBlock(d, c["heads"], latent_dim, DenseFFN(d, 2 * d), cross=True)
    with torch.no_grad():
        block.q_cross.bias.zero_()
        block.kv_cross.bias.zero_()
    block.load_state_dict(pam_state(fx["pam"]["state"]), strict=False)
    return block


def run_block(fx: dict, block: DiTBlock) -> torch.Tensor:
    x = fx["pam"]["inputs"]
    c = torch.zeros(x["x"].shape[0], x["x"].shape[-1])
    return block(x["x"], c, x["context"], x["m"], None)[0]


def test_prompt_bank_equal(parity):
    """Prototype pool and assignment logits, ``sum(m * R)``, gradients, and the state after one Adam step."""
    fx = parity.load(FIXTURE)
    p = fx["prompt"]
    net = build_prompter(fx)
    m = net(p["inputs"]["x"].transpose(1, 2))  # ours takes (B, L, C), the reference (B, C, L)
    parity.compare("prompt/prototypes", net.latents, p["outputs"]["latents"][0])
    parity.compare("prompt/assignment logits", m, p["outputs"]["m"])
    objective = (m * p["inputs"]["r"]).sum()
    parity.compare("prompt/objective", objective, p["loss"])
    optimizer = torch.optim.SGD([q for q in net.parameters() if q.requires_grad], lr=fx["meta"]["config"]["sgd_lr"])
    optimizer.zero_grad()
    objective.backward()
    ours = {k: q.grad for k, q in net.named_parameters() if q.requires_grad}
    for name, (mine, theirs) in by_module(ours, prompt_state(p["grads"])).items():
        parity.compare(f"prompt/grad/{name}", mine, theirs)
    optimizer.step()
    for name, (mine, theirs) in by_module(net.state_dict(), prompt_state(p["after_step"])).items():
        parity.compare(f"prompt/after_step/{name}", mine, theirs)
    parity.describe(
        method="timedp",
        task="timemode",
        compared="prompt bank (prototypes, assignment logits), PAM cross-attention, DDPM schedules: forward, "
        "gradients, one Adam step (prompt bank, PAM), buffers and q/posterior formulas (schedules)",
        note="ours is a DiT (TimeDP: a UNet); only the shared parts are compared",
    )


def test_pam_cross_attention_equal(parity):
    """Rows with at least one prototype kept: output, gradients of the shared weights, one Adam step."""
    fx = parity.load(FIXTURE)
    p = fx["pam"]
    block = build_block(fx)
    y = run_block(fx, block)
    parity.compare("pam/output", y[:-1], p["outputs"]["y"][:-1])
    objective = (y[:-1] * p["inputs"]["r"][:-1]).sum()
    parity.compare("pam/objective", objective, p["loss"])
    optimizer = torch.optim.Adam(block.parameters(), lr=fx["meta"]["config"]["lr"])
    optimizer.zero_grad()
    objective.backward()
    ours = dict(block.named_parameters())
    for name, grad in pam_state(p["grads"]).items():
        parity.compare(f"pam/grad/{name}", ours[name].grad, grad)
    optimizer.step()
    after = block.state_dict()
    for name, value in pam_state(p["after_step"]).items():
        parity.compare(f"pam/after_step/{name}", after[name], value)


def test_pam_all_masked_prompt_differs(parity):
    """Pinned: a prompt with every logit <= 0 (all prototypes masked)."""
    fx = parity.load(FIXTURE)
    y = run_block(fx, build_block(fx))
    parity.differs(
        "pam/output, all prototypes masked",
        y[-1],
        fx["pam"]["outputs"]["y"][-1],
        at_least=1e-3,
        why="reference adds -finfo(float32).max to masked logits, which swamps them: an all-masked prompt attends "
        "uniformly; ours adds -1e4 (prompts.pam_bias), which keeps softmax(sim + m) on such a row",
    )


@pytest.mark.parametrize("schedule", ["linear", "cosine"])
def test_schedule_equal(parity, schedule):
    """Every schedule buffer both sides have, and the q / posterior formulas at t in {0, 1, 57, T - 1}."""
    fx = parity.load(FIXTURE)
    s = fx["schedule"][schedule]
    cfg = s["config"]
    kwargs = {"start": cfg["linear_start"], "end": cfg["linear_end"]} if schedule == "linear" else {}
    diffusion = GaussianDiffusion(cfg["timesteps"], schedule, **kwargs)
    b = s["buffers"]
    for name in ("betas", "alphas_cumprod", "alphas_cumprod_prev", "sqrt_alphas_cumprod",
                 "sqrt_one_minus_alphas_cumprod", "posterior_variance", "posterior_mean_coef1",
                 "posterior_mean_coef2"):  # fmt: skip
        parity.compare(f"{schedule}/{name}", getattr(diffusion, name), b[name])
    parity.compare(
        f"{schedule}/posterior_log_variance (t >= 1)",
        diffusion.posterior_log_variance[1:],
        b["posterior_log_variance_clipped"][1:],
    )
    x, out = s["inputs"], s["outputs"]
    xt = diffusion.q_sample(x["x0"], x["t"], x["noise"])
    parity.compare(f"{schedule}/q_sample", xt, out["q_sample"])
    x0 = diffusion.predict_x0(xt, x["t"], x["noise"])
    for row, t in enumerate(x["t"].tolist()):
        # x0 = (x_t - sqrt(1 - abar) eps) / sqrt(abar) and the reference's sqrt(1 / abar) x_t - sqrt(1 / abar - 1) eps
        # round differently in float32, and the cancellation amplifies it by 1 / sqrt(abar_t) (about 1e3 at the
        # cosine schedule's last step): allowed 16 float32 ulps of that, at least 1e-5.
        tol = max(1e-5, 16 * torch.finfo(torch.float32).eps / float(b["alphas_cumprod"][t]) ** 0.5)
        parity.compare(f"{schedule}/predict x0 (t={t})", x0[row], out["predict_start_from_noise"][row], tol)
    mean, log_var = diffusion.q_posterior(x["x0"], xt, x["t"])
    parity.compare(f"{schedule}/posterior mean", mean, out["posterior_mean"])
    parity.compare(f"{schedule}/posterior log variance (t >= 1)", log_var[1:],
                   out["posterior_log_variance_clipped"][1:])  # fmt: skip


def test_posterior_log_variance_at_t0_differs(parity):
    """Pinned: log of the zero posterior variance at t = 0."""
    fx = parity.load(FIXTURE)
    b = fx["schedule"]["linear"]["buffers"]
    diffusion = GaussianDiffusion(200, "linear", 5e-4, 0.1)
    parity.differs(
        "linear/posterior_log_variance at t = 0",
        diffusion.posterior_log_variance[:1],
        b["posterior_log_variance_clipped"][:1],
        at_least=0.1,
        why="reference clips log(0) at t = 0 to log(1e-20) = -46.1; ours uses log(beta~_1) (improved-DDPM "
        "clipping); neither sampler adds noise at t = 0, so sampling is unaffected",
    )
