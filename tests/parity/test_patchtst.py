"""PatchTST (seer task's baseline) equals the authors' supervised PatchTST (yuqinie98/PatchTST,
``PatchTST_supervised/models/PatchTST.py``) with the same weights: forward with RevIN in training mode, MSE loss,
every gradient, BatchNorm running statistics, one Adam step and an eval-mode forward after it (fixture from
``scripts/parity/export_patchtst.py``), at e_layers 1 with RevIN affine.

Two differences are pinned: their encoder adds the previous layer's attention scores to the next layer's
(``res_attention=True``, their default; ours does not: visible from e_layers 2), and their runs use RevIN without
affine parameters (``--affine 0``) while ours always learns them (equal at initialisation, apart after a step).
Tolerance 1e-5 relative (fp32, a few hundred accumulated products); the patch-embedding bias gradient 5e-5: it
is a small sum of larger terms (the BatchNorms remove most of a constant shift), so fp32 rounding of the terms shows
at ~1e-5 of the result. Gradients that are 0 by symmetry are compared against the model's largest gradient and
left out of the Adam step (``parity_steps``)."""

from __future__ import annotations

import torch
from parity_steps import compare_gradients_and_step

from zoo_tasks.timeseries.patchtst import PatchTSTForecaster

FIXTURE = "patchtst_backbone"


def ours_state(theirs: dict[str, torch.Tensor], n_patches: int, d_model: int) -> dict[str, torch.Tensor]:
    """Their state dict (or gradients) renamed to :class:`PatchTSTNet`'s: W_Q/W_K/W_V packed into ``qkv``; the
    head's columns reordered (theirs flatten (d_model, patch), ours (patch, d_model)); their fixed attention
    ``scale`` has no counterpart (ours: SDPA's 1/sqrt(head_dim))."""
    out: dict[str, torch.Tensor] = {}
    for key, value in theirs.items():
        key = key.removeprefix("model.")
        if key.startswith("revin_layer.affine_"):
            out["revin." + key.removeprefix("revin_layer.affine_")] = value
        elif key.startswith("backbone.W_P."):
            out["embed." + key.removeprefix("backbone.W_P.")] = value
        elif key == "backbone.W_pos":
            out["pos"] = value
        elif key.startswith("head.linear."):
            if key.endswith("weight"):
                value = value.view(-1, d_model, n_patches).transpose(1, 2).reshape(value.shape[0], -1)
            out[key] = value
        elif key.startswith("backbone.encoder.layers."):
            i, rest = key.removeprefix("backbone.encoder.layers.").split(".", 1)
            mapped = {"self_attn.to_out.0.": "out.", "norm_attn.1.": "norm1.norm.", "norm_ffn.1.": "norm2.norm.",
                      "ff.": "ff."}  # fmt: skip
            for theirs_prefix, ours_prefix in mapped.items():
                if rest.startswith(theirs_prefix):
                    out[f"encoder.{i}.{ours_prefix}{rest.removeprefix(theirs_prefix)}"] = value
            if rest.startswith("self_attn.W_Q."):
                leaf = rest.removeprefix("self_attn.W_Q.")
                parts = [theirs[f"model.backbone.encoder.layers.{i}.self_attn.W_{m}.{leaf}"] for m in "QKV"]
                out[f"encoder.{i}.qkv.{leaf}"] = torch.cat(parts)
    return out


def symmetric_zero(c: dict) -> dict[str, slice]:
    """Entries whose gradient is 0 by symmetry (``parity_steps``): per layer the key and value biases (softmax
    shift; softmax-weighted constant) and the biases right before a BatchNorm (attention output, FFN output)."""
    d, out = c["d_model"], {}
    for i in range(c["e_layers"]):
        out |= {f"encoder.{i}.qkv.bias": slice(d, 3 * d), f"encoder.{i}.out.bias": slice(0, d),
                f"encoder.{i}.ff.3.bias": slice(0, d)}  # fmt: skip
    return out


def build(fx: dict, state: dict, **changes) -> PatchTSTForecaster:
    """Our forecaster, built through its constructor with the fixture's config, loaded with ``state``."""
    c = {**fx["meta"]["config"], **changes}
    model = PatchTSTForecaster(
        seq_len=c["seq_len"], pred_len=c["pred_len"], num_channels=c["enc_in"], d_model=c["d_model"],
        n_heads=c["n_heads"], d_ff=c["d_ff"], e_layers=c["e_layers"], patch_len=c["patch_len"], stride=c["stride"],
        dropout=c["dropout"], head_dropout=c["head_dropout"],
    )  # fmt: skip
    n_patches = (c["seq_len"] - c["patch_len"]) // c["stride"] + 2
    mapped = ours_state(state, n_patches, c["d_model"])
    if not c["affine"]:  # theirs has no RevIN parameters: ours start at their identity values
        mapped |= {"revin.weight": torch.ones(c["enc_in"]), "revin.bias": torch.zeros(c["enc_in"])}
    model.net.load_state_dict(mapped, strict=True)
    return model.train()


def test_forward_loss_gradients_batchnorm_and_one_adam_step_equal_theirs(parity):
    fx = parity.load(FIXTURE)
    parity.describe(
        method="patchtst",
        task="seer",
        compared="forward with RevIN (train mode), MSE loss, gradients, BatchNorm running stats, one Adam step, "
        "eval forward after it",
    )
    c = fx["meta"]["config"]
    n_patches = (c["seq_len"] - c["patch_len"]) // c["stride"] + 2
    for key, value in fx["state"].items():
        if key.endswith("sdp_attn.scale"):
            parity.compare("attention scale", torch.tensor((c["d_model"] // c["n_heads"]) ** -0.5), value)
    model = build(fx, fx["state"])
    x, y = fx["inputs"]["x"], fx["inputs"]["y"]
    optimizer = torch.optim.Adam(model.net.parameters(), lr=fx["meta"]["optimizer"]["lr"])
    parity.compare("forecast", model.net(x).forecast, fx["outputs"])
    model.net.load_state_dict(ours_state(fx["state"], n_patches, c["d_model"]))  # undo the BN statistics update
    loss = model.step_loss((x, y)).loss
    parity.compare("MSE loss", loss, fx["loss"])
    optimizer.zero_grad()
    loss.backward()
    ours_buffers = dict(model.net.named_buffers())
    for key, value in ours_state(fx["buffers_after_forward"], n_patches, c["d_model"]).items():
        parity.compare(f"buffer/{key}", ours_buffers[key], value)
    d = c["d_model"]
    compare_gradients_and_step(
        parity,
        dict(model.net.named_parameters()),
        optimizer,
        ours_state(fx["grads"], n_patches, d),
        ours_state(fx["after_step"], n_patches, d),
        symmetric_zero=symmetric_zero(c),
        tolerance={"embed.bias": 5e-5},
    )
    with torch.no_grad():  # their step on those entries was lr x sign(rounding noise): take theirs to compare the rest
        after = ours_state(fx["after_step"], n_patches, d)
        for name, sl in symmetric_zero(c).items():
            dict(model.net.named_parameters())[name].view(-1)[sl] = after[name].reshape(-1)[sl]
    with torch.no_grad():
        parity.compare("eval forecast after the step", model.eval().net(x).forecast, fx["eval_outputs_after_step"])


def test_their_residual_attention_scores_make_two_layer_outputs_differ(parity):
    fx = parity.load(FIXTURE)
    parity.describe(method="patchtst", task="seer", compared="e_layers 2 forward (residual attention scores)")
    case = fx["residual_attention"]
    model = build(fx, case["state"], e_layers=case["e_layers"])
    with torch.no_grad():
        ours = model.net(fx["inputs"]["x"]).forecast
    parity.differs(
        "e_layers 2 forecast",
        ours,
        case["outputs"],
        at_least=1e-3,
        why="their layers add the previous layer's pre-softmax attention scores (res_attention=True); ours do not",
    )


def test_their_runs_without_revin_affine_match_at_init_and_part_after_a_step(parity):
    fx = parity.load(FIXTURE)
    parity.describe(method="patchtst", task="seer", compared="RevIN without affine (their --affine 0)")
    case = fx["affine_off"]
    model = build(fx, case["state"], affine=0)
    x, y = fx["inputs"]["x"], fx["inputs"]["y"]
    optimizer = torch.optim.Adam(model.net.parameters(), lr=fx["meta"]["optimizer"]["lr"])
    out = model.net(x).forecast
    parity.compare("forecast at init, theirs without affine", out, case["outputs"])
    torch.nn.functional.mse_loss(out, y).backward()
    optimizer.step()
    with torch.no_grad():
        after = model.net(x).forecast
    parity.differs(
        "forecast after one Adam step, theirs without affine",
        after,
        case["outputs_after_step"],
        at_least=1e-5,
        why="ours always learns RevIN's affine weight and bias; their runs (run_longExp.py --affine 0) have none",
    )
