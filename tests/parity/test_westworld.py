"""Parity of our WestWorld system gate (``zoo_tasks.worldmodel.model.SysMoE``) and structural embedding
(``WestWorldNet.structural_embedding``) with the authors' ``Sys_MoE_Layer`` and ``StructurePositionalEmbedding``
(511205787/WestWorld ``models/WestWorld/westworld.py``), fixture from ``scripts/parity/export_westworld.py``.

Two chained layers (the second gets the first's system token): CLS appended to every variate sequence, Mamba,
CLS-state softmax gate over a dense mixture of GELU FFN experts, residual, output and CLS LayerNorms. The reference
runs with ``mamba_ssm.Mamba`` stubbed by mambapy's ``MambaBlock`` (ours on CPU), so the SSM is the same code on
both sides; what is compared is everything around it. Our gate is a bias-free ``zoo.moe`` soft router; the
reference's ``nn.Linear`` gate has a bias: compared with that bias zeroed, and the difference with its initial
bias pinned.

The structural embedding is compared as a mechanism (four embedding tables of width d // 4, the last taking the
remainder, concatenated), with our extra token-kind table zeroed. What indexes the tables differs: the reference
uses (object id, pre-order, in-order, post-order) of the MJCF body tree, ours (pre-order, mirrored pre-order,
post-order, depth) plus the kind; and the reference's forward disables its structural attention mask
(``spatial_mask = None``), which ours applies. Those are design choices, not numbers this fixture can check.
"""

from __future__ import annotations

import torch

from zoo_tasks.worldmodel.model import SysMoE, WestWorldNet

FIXTURE = "westworld"


def sys_moe_state(up: dict[str, torch.Tensor], layer: int, num_experts: int) -> dict[str, torch.Tensor]:
    """Reference ``Sys_MoE_Layer`` entries of ``layers.<layer>`` -> our ``SysMoE`` state (expert Linears stacked)."""
    p = f"{layer}."
    out = {"router.gate.weight": up[p + "layer.gate.weight"]}
    if p + "cls_param" in up:  # absent from the gradients of a layer given the previous layer's system token
        out["cls"] = up[p + "cls_param"]
    for name in ("norm1", "norm2"):
        for leaf in ("weight", "bias"):
            out[f"{name}.{leaf}"] = up[f"{p}layer.{name}.{leaf}"]
    for name in ("out_norm", "cls_norm"):
        for leaf in ("weight", "bias"):
            out[f"{name}.{leaf}"] = up[f"{p}{name}.{leaf}"]
    for key, value in up.items():
        if key.startswith(p + "layer.mamba.block."):
            out["mixer.block." + key.removeprefix(p + "layer.mamba.block.")] = value
    experts = range(num_experts)
    for ours_w, ours_b, theirs in (("fc1", "b1", "linear_fc1"), ("fc2", "b2", "linear_fc2")):
        out[ours_w] = torch.stack([up[f"{p}layer.moe.{e}.{theirs}.weight"].T for e in experts])
        out[ours_b] = torch.stack([up[f"{p}layer.moe.{e}.{theirs}.bias"] for e in experts]).unsqueeze(1)
    return out


def build(fx: dict) -> list[SysMoE]:
    c = fx["meta"]["config"]
    layers = []
    for i in range(2):
        layer = SysMoE(
            c["h_dim"], 2 * c["h_dim"], c["num_experts"], moe=True, temporal="mamba", d_state=c["state_size"],
            heads=2, dropout=0.0, router="soft", router_kwargs=None, top_k=1, dense_hidden=2 * c["h_dim"],
        )  # fmt: skip
        layer.load_state_dict(sys_moe_state(fx["state"], i, c["num_experts"]))
        layers.append(layer.train())
    return layers


def run(fx: dict, layers: list[SysMoE]):
    y1, cls1, routing1 = layers[0](fx["inputs"]["x"], None)
    y2, cls2, routing2 = layers[1](y1, cls1)
    return y1, cls1, y2, cls2, (routing1, routing2)


def test_system_gate_forward_equal(parity):
    """Both layers' outputs and carried system tokens, and the gate weights (per variate sequence)."""
    fx = parity.load(FIXTURE)
    y1, cls1, y2, cls2, routings = run(fx, build(fx))
    out = fx["outputs"]
    parity.compare("layer 1 output", y1, out["y1"])
    parity.compare("layer 1 system token", cls1, out["cls1"])
    parity.compare("layer 2 output", y2, out["y2"])
    parity.compare("layer 2 system token", cls2, out["cls2"])
    parity.compare("gate weights", torch.stack([r.dense_weights() for r in routings]), out["gates"])
    parity.describe(
        method="westworld",
        task="westworld",
        compared="two chained Sys-MoE layers (system token, Mamba, CLS-gated dense FFN experts; d=16, E=3): "
        "forward, gates, gradients, one Adam step; structural embedding tables",
        note="reference's mamba_ssm.Mamba stubbed by mambapy's MambaBlock (ours on CPU); gate bias zeroed "
        "(ours has none: pinned)",
    )


def test_gate_bias_differs(parity):
    """Pinned: the reference gate's bias (ours has none) changes the output when it is not zero."""
    fx = parity.load(FIXTURE)
    y2 = run(fx, build(fx))[2]
    parity.differs(
        "layer 2 output with the reference's gate bias",
        y2,
        fx["outputs"]["with_gate_bias"],
        at_least=1e-4,
        why="reference MambaMoELayer.gate is nn.Linear with bias; our zoo.moe soft router's gate has no bias",
    )


def test_gradients_and_adam_step_equal(parity):
    """``sum(y2 * R1) + sum(cls2 * R2)``: every gradient (the reference gate bias's has no counterpart) and every
    parameter after one Adam step."""
    fx = parity.load(FIXTURE)
    c = fx["meta"]["config"]
    layers = build(fx)
    _, _, y2, cls2, _ = run(fx, layers)
    objective = (y2 * fx["inputs"]["r1"]).sum() + (cls2 * fx["inputs"]["r2"]).sum()
    parity.compare("objective", objective, fx["loss"]["objective"])
    optimizer = torch.optim.Adam([p for layer in layers for p in layer.parameters()], lr=c["lr"])
    optimizer.zero_grad()
    objective.backward()
    for i, layer in enumerate(layers):
        theirs = sys_moe_state(fx["grads"], i, c["num_experts"])
        for name, p in layer.named_parameters():
            if name not in theirs:  # the second layer's own system token is unused (it gets the first's)
                assert name == "cls" and i == 1 and p.grad is None
                continue
            parity.compare(f"grad/{i}.{name}", p.grad, theirs[name])
    optimizer.step()
    for i, layer in enumerate(layers):
        theirs = sys_moe_state(fx["after_step"], i, c["num_experts"])
        for name, value in layer.state_dict().items():
            parity.compare(f"after_step/{i}.{name}", value, theirs[name])


def test_structural_embedding_tables_equal(parity):
    """Four tables of width d // 4 (the last d - 3 * (d // 4)) concatenated, for the same indices."""
    fx = parity.load(FIXTURE)
    c, s = fx["meta"]["config"], fx["struct_state"]
    net = WestWorldNet(bins=8, dim=c["struct_dim"], blocks=1, heads=2, num_experts=2, ffn_hidden=8, d_state=4)
    with torch.no_grad():
        for table, i in zip((*net.tree, net.depth), range(4)):
            theirs = s[f"tabs.{i}.weight"]
            assert table.weight.shape[1] == theirs.shape[1], "table widths follow the same split"
            table.weight[: len(theirs)] = theirs
        net.kind.weight.zero_()  # ours only: the token-kind table
    inds = fx["inputs"]["struct_inds"]
    struct = torch.cat([inds.T, torch.zeros(inds.shape[1], 1, dtype=inds.dtype)], 1)
    parity.compare("structural embedding", net.structural_embedding(struct), fx["outputs"]["struct"])
