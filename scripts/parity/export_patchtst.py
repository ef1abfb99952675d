"""Export the PatchTST parity fixture (yuqinie98/PatchTST, ``PatchTST_supervised/models/PatchTST.py`` ``Model``):
the supervised model with RevIN, its forward in training mode (BatchNorm on batch statistics), MSE loss, gradients,
one Adam step, the BatchNorm running statistics and an eval-mode forward after the step.

    python scripts/parity/export_patchtst.py --upstream /tmp/upstream/patchtst --commit SHA \
        --out tests/fixtures/parity/patchtst_backbone.pt

Three configurations share the tiny widths below: ``main`` (e_layers 1, RevIN affine, dropout 0: every parameter
has a counterpart in ours), ``residual_attention`` (e_layers 2: their layers add the previous layer's attention
scores, ``res_attention=True`` by default) and ``affine_off`` (RevIN without affine, their run_longExp.py default
``--affine 0``: outputs, then outputs after one Adam step)."""

from __future__ import annotations

import sys
from types import SimpleNamespace

import torch
from fixture_io import exported_with, exporter_args, grads_and_step, save_fixture
from torch import nn

BASE = dict(enc_in=3, seq_len=32, pred_len=8, e_layers=1, n_heads=2, d_model=8, d_ff=16, dropout=0.0,
            fc_dropout=0.0, head_dropout=0.0, individual=0, patch_len=8, stride=4, padding_patch="end", revin=1,
            affine=1, subtract_last=0, decomposition=0, kernel_size=25)  # fmt: skip
LR = 1e-3


def build(model_cls, **changes) -> nn.Module:
    torch.manual_seed(0)
    return model_cls(SimpleNamespace(**{**BASE, **changes}))


def main() -> None:
    args = exporter_args(__doc__.splitlines()[0])
    sys.path.insert(0, str(args.upstream / "PatchTST_supervised"))
    from models.PatchTST import Model

    gen = torch.Generator().manual_seed(1)
    x = torch.randn(4, BASE["seq_len"], BASE["enc_in"], generator=gen) * torch.tensor([1.0, 3.0, 0.5]) + torch.tensor(
        [0.0, 5.0, -2.0]
    )
    y = torch.randn(4, BASE["pred_len"], BASE["enc_in"], generator=gen)

    model = build(Model).train()
    state = {k: v.clone() for k, v in model.state_dict().items()}
    optimizer = torch.optim.Adam(model.parameters(), lr=LR)
    out = model(x)
    loss = nn.MSELoss()(out, y)
    optimizer.zero_grad()
    loss.backward()
    buffers = {k: v.clone() for k, v in model.named_buffers()}
    grads, after = grads_and_step(model, optimizer)
    with torch.no_grad():
        eval_after = model.eval()(x)

    residual = build(Model, e_layers=2).train()
    with torch.no_grad():
        residual_out = residual(x)

    affine_off = build(Model, affine=0).train()
    affine_state = {k: v.clone() for k, v in affine_off.state_dict().items()}
    opt = torch.optim.Adam(affine_off.parameters(), lr=LR)
    affine_out = affine_off(x)
    nn.MSELoss()(affine_out, y).backward()
    opt.step()
    with torch.no_grad():
        affine_after = affine_off(x)

    save_fixture(
        args.out,
        {
            "meta": {
                "upstream": "yuqinie98/PatchTST",
                "commit": args.commit,
                "call": "models.PatchTST.Model(configs).train(); out = model(x); nn.MSELoss()(out, y).backward(); "
                "Adam step; model.eval()(x)",
                "config": BASE,
                "optimizer": {"name": "Adam", "lr": LR},
                "exported_with": exported_with(),
            },
            "inputs": {"x": x, "y": y},
            "state": state,
            "outputs": out,
            "loss": loss,
            "grads": grads,
            "buffers_after_forward": buffers,
            "after_step": after,
            "eval_outputs_after_step": eval_after,
            "residual_attention": {"e_layers": 2, "state": residual.state_dict(), "outputs": residual_out},
            "affine_off": {"state": affine_state, "outputs": affine_out, "outputs_after_step": affine_after},
        },
    )


if __name__ == "__main__":
    main()
