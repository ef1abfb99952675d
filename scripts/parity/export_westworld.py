"""Export the WestWorld parity fixture from the authors' code (511205787/WestWorld, CC BY-NC 4.0: run here for
non-commercial research only; no upstream code enters the project).

Runs two of the reference's ``Sys_MoE_Layer`` (``models/WestWorld/westworld.py``: system/CLS token appended to each
variate's sequence, Mamba over it, the CLS state softmax-gating a dense mixture of FFN experts, the CLS carried to
the next layer) and its ``StructurePositionalEmbedding`` on small random inputs, saving numbers only:

    python scripts/parity/export_westworld.py --upstream /tmp/upstream/westworld --commit SHA \\
        --out tests/fixtures/parity/westworld.pt

The reference imports ``mamba_ssm.Mamba`` (CUDA kernels); as its layer takes any module with Mamba's constructor
arguments, ``mamba_ssm`` is given here as a stub whose ``Mamba`` is mambapy's pure-PyTorch ``MambaBlock`` (the
block our model uses on CPU), so the SSM itself is not what this fixture checks. Its Lightning base class
(``models/base_model``: wandb logging, data stats) is stubbed too; neither is used by the layers exported.

The reference's gate is ``nn.Linear`` with a bias, ours has none: the main run zeroes the gate bias (the matched
comparison); the output with the reference's own initial bias is saved as ``outputs/with_gate_bias`` to pin the
difference. Objective: ``sum(y2 * R1) + sum(cls2 * R2)`` after both layers; one Adam step (lr 1e-2).
"""

from __future__ import annotations

import sys
import types
from pathlib import Path

import torch
from fixture_io import exporter_args
from torch import nn

CONFIG = {"h_dim": 16, "sequences": 6, "time": 5, "num_experts": 3, "state_size": 8, "struct_dim": 18}
STRUCT_ROWS = [5, 7, 7, 7]
SEED, LR = 0, 1e-2


def stub_modules(upstream: Path) -> None:
    """``mamba_ssm.Mamba`` -> mambapy's MambaBlock; the Lightning base class -> nn.Module; ``models`` as a bare
    package (its ``__init__`` imports every world model of the repository and their dependencies)."""
    from mambapy.mamba import MambaBlock, MambaConfig

    class Mamba(nn.Module):
        def __init__(self, d_model, d_state=16, d_conv=4, expand=2, layer_idx=None, **_):
            super().__init__()
            config = MambaConfig(d_model=d_model, n_layers=1, d_state=d_state, d_conv=d_conv, expand_factor=expand)
            self.block = MambaBlock(config)

        def forward(self, x):
            return self.block(x)

    sys.modules["mamba_ssm"] = types.SimpleNamespace(Mamba=Mamba)
    models = types.ModuleType("models")
    models.__path__ = [str(upstream / "models")]
    sys.modules["models"] = models
    base = types.ModuleType("models.base_model.base_model_westworld")
    base.BaseModel = nn.Module
    sys.modules["models.base_model.base_model_westworld"] = base


def main() -> None:
    args = exporter_args(__doc__.splitlines()[0], "511205787/WestWorld")
    sys.path.insert(0, str(args.upstream))
    stub_modules(args.upstream)
    from models.WestWorld.westworld import StructurePositionalEmbedding, Sys_MoE_Layer

    c = CONFIG
    torch.manual_seed(SEED)
    mamba_cfg = {"state_size": c["state_size"], "num_experts": c["num_experts"], "device": "cpu"}
    layers = nn.ModuleList(Sys_MoE_Layer(c["h_dim"], mamba_cfg) for _ in range(2))
    gen = torch.Generator().manual_seed(SEED)
    x = torch.randn(c["sequences"], c["time"], c["h_dim"], generator=gen)
    r1 = torch.randn(c["sequences"], c["time"], c["h_dim"], generator=gen)
    r2 = torch.randn(c["sequences"], 1, c["h_dim"], generator=gen)
    with torch.no_grad():  # non-trivial LayerNorm affine parameters
        for name, p in layers.named_parameters():
            if "norm" in name and "mamba" not in name:
                p.add_(0.1 * torch.randn(p.shape, generator=gen))
    layers.train()

    def forward():
        y1, cls1 = layers[0](x)
        y2, cls2 = layers[1](y1, cls_in=cls1)
        return y1, cls1, y2, cls2

    with torch.no_grad():
        with_bias = forward()[2].clone()
        gate_bias = {f"{i}": layer.layer.gate.bias.clone() for i, layer in enumerate(layers)}
        for layer in layers:
            layer.layer.gate.bias.zero_()
    state = {k: v.clone() for k, v in layers.state_dict().items()}
    gates: list[torch.Tensor] = []
    for layer in layers:  # the gate's softmax input is the gate Linear's output
        layer.layer.gate.register_forward_hook(lambda _m, _i, out: gates.append(torch.softmax(out.detach(), -1)))
    y1, cls1, y2, cls2 = forward()
    objective = (y2 * r1).sum() + (cls2 * r2).sum()
    optimizer = torch.optim.Adam(layers.parameters(), lr=LR)
    optimizer.zero_grad()
    objective.backward()
    grads = {k: p.grad.detach().clone() for k, p in layers.named_parameters() if p.grad is not None}
    optimizer.step()

    struct = StructurePositionalEmbedding(c["struct_dim"], STRUCT_ROWS)
    inds = [torch.randint(0, rows, (9,), generator=gen) for rows in STRUCT_ROWS]
    struct_out = struct(inds)

    fixture = {
        "meta": {
            "upstream": "511205787/WestWorld",
            "commit": args.commit,
            "call": (
                "models/WestWorld/westworld.py: layers = [Sys_MoE_Layer(h_dim, {state_size, num_experts}) x 2] "
                "(mamba_ssm.Mamba stubbed by mambapy MambaBlock); gate biases zeroed; y1, cls1 = layers[0](x); "
                "y2, cls2 = layers[1](y1, cls_in=cls1); objective = sum(y2 * R1) + sum(cls2 * R2); Adam(lr).step(). "
                "StructurePositionalEmbedding(struct_dim, rows)(inds)"
            ),
            "config": dict(c, struct_rows=STRUCT_ROWS, seed=SEED, optimizer="Adam", lr=LR, license="CC-BY-NC-4.0"),
            "exported_with": {"torch": str(torch.__version__), "mambapy": "pure-PyTorch MambaBlock (stub)"},
        },
        "inputs": {"x": x, "r1": r1, "r2": r2, "gate_bias": gate_bias, "struct_inds": torch.stack(inds)},
        "state": state,
        "struct_state": {k: v.clone() for k, v in struct.state_dict().items()},
        "outputs": {
            "y1": y1.detach(),
            "cls1": cls1.detach(),
            "y2": y2.detach(),
            "cls2": cls2.detach(),
            "gates": torch.stack(gates),
            "with_gate_bias": with_bias,
            "struct": struct_out.detach(),
        },
        "loss": {"objective": objective.detach()},
        "grads": grads,
        "after_step": {k: v.clone() for k, v in layers.state_dict().items()},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    torch.save(fixture, args.out)
    print(f"wrote {args.out} ({args.out.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
