"""Parity of our GMoE layer (``zoo_tasks.graphs.baselines.GMoELayer``) with the authors' ``MoE`` layer
(VITA-Group/Graph-Mixture-of-Experts ``graphproppred/moe.py``), fixture from ``scripts/parity/export_gmoe.py``.

Same weights, inputs and noise seed: the noisy top-k gate, the smooth load estimator, every hop-1/hop-2 expert
(GCNConv + BatchNorm), the mixture (the reference's mean over the E gated experts), the balance loss (its unbiased
cv², ``gmoe_aux_weights``), the gradients of ``sum(y * R) + loss`` and one SGD step agree to fp32 round-off.
"""

from __future__ import annotations

import torch

from zoo.moe import weighted_aux_loss
from zoo_tasks.graphs.baselines import GMoELayer, gmoe_aux_weights

FIXTURE = "gmoe"


GATE_NAMES = {"w_gate": "router.gate.weight", "w_noise": "router.noise.weight"}


def ours_name(name: str) -> str | None:
    """The ``GMoELayer`` name of a reference state entry (None for the reference's Normal(0, 1) buffers)."""
    if name in ("mean", "std"):
        return None
    if name in GATE_NAMES:
        return GATE_NAMES[name]
    return name.replace("experts_conv.", "convs.").replace(".conv.", ".").replace("experts_bn.", "norms.")


def upstream_to_ours(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Reference state -> ``GMoELayer`` state (gate matrices (in, E) become Linear weights (E, in))."""
    return {ours_name(k): v.T if k in GATE_NAMES else v for k, v in state.items() if ours_name(k) is not None}


def build(fx: dict) -> GMoELayer:
    c = fx["meta"]["config"]
    layer = GMoELayer(c["in_dim"], c["out_dim"], c["num_experts"], c["num_hop1"], c["k"], router="noisy_topk")
    layer.load_state_dict(upstream_to_ours(fx["state"]))
    return layer.train()


def run(fx: dict, layer: GMoELayer):
    torch.manual_seed(fx["meta"]["config"]["noise_seed"])
    x = fx["inputs"]
    return layer(x["x"], x["edge_index"], x["edge_index_2hop"])


def balance_loss(fx: dict, out) -> torch.Tensor:
    """The layer's balance loss as ``GMoE`` weighs it (``gmoe_aux_weights``)."""
    c = fx["meta"]["config"]
    return weighted_aux_loss(out.routing, gmoe_aux_weights(c["coef"], c["num_experts"]))


def objective(fx: dict, out) -> torch.Tensor:
    """The reference's training objective on this layer: ``sum(y * R) + loss``."""
    return (out.output * fx["inputs"]["target_weights"]).sum() + balance_loss(fx, out)


def test_noise_draw_matches_fixture(parity):
    """Same seed, same noise: the gate's ``randn_like`` draws what the reference drew."""
    fx = parity.load(FIXTURE)
    torch.manual_seed(fx["meta"]["config"]["noise_seed"])
    parity.compare("noise draw", torch.randn_like(fx["inputs"]["noise"]), fx["inputs"]["noise"], tolerance=0.0)


def test_gate_load_and_experts_equal(parity):
    """Noisy top-k gates (T, E), the smooth load estimator summed over nodes (E,), and every expert's output."""
    fx = parity.load(FIXTURE)
    out = run(fx, build(fx))
    parity.compare("gates", out.routing.dense_weights(), fx["outputs"]["gates"])
    parity.compare("load (smooth estimator)", out.routing.load_prob.sum(0), fx["outputs"]["load"])
    parity.compare("expert outputs", out.expert_outputs, fx["outputs"]["expert_outputs"])
    parity.compare("output (mean of the gated experts)", out.output, fx["outputs"]["y"])
    parity.describe(
        method=["gmoe", "gmoe_tuned"],
        task="c2gmoe",
        compared="one GMoE layer (E=4, 2 hop-1 + 2 hop-2 GCN experts, noisy top-2): gates, load, experts, "
        "output, balance loss, gradients, one SGD step",
        note="experts are PyG GCNConv (ours) passed into the reference layer, whose own convs need OGB bond features",
    )


def test_balance_loss_equals_the_reference_unbiased_cv2(parity):
    """The balance loss GMoE trains on equals the reference's ``coef * (cv²(importance) + cv²(load))``."""
    fx = parity.load(FIXTURE)
    parity.compare("balance loss", balance_loss(fx, run(fx, build(fx))), fx["loss"]["aux"])


def test_gradients_and_sgd_step_equal(parity):
    """The objective, every gradient and the state after one SGD step match. A conv's
    bias gradient is 0 up to round-off (the bias is cancelled by the train-mode BatchNorm after it), so it is
    compared together with that conv's weight gradient (relative to their joint max)."""
    fx = parity.load(FIXTURE)
    layer = build(fx)
    loss = objective(fx, run(fx, layer))
    parity.compare("objective", loss, fx["loss"]["objective"])
    optimizer = torch.optim.SGD(layer.parameters(), lr=fx["meta"]["config"]["lr"])
    optimizer.zero_grad()
    loss.backward()
    ours_grads = {name: p.grad for name, p in layer.named_parameters()}
    for name, theirs in fx["grads"].items():
        grad = ours_grads[ours_name(name)]
        if name.endswith("conv.bias"):
            continue  # compared with its weight below: 0 up to round-off (a bias before train-mode BatchNorm)
        if name.endswith("conv.lin.weight"):
            bias = name.replace("lin.weight", "bias")
            grad = torch.cat([grad.flatten(), ours_grads[ours_name(bias)]])
            theirs = torch.cat([theirs.flatten(), fx["grads"][bias]])
            name = name.removesuffix(".lin.weight") + " (weight, bias)"
        parity.compare(f"grad/{name}", grad.T if name in GATE_NAMES else grad, theirs)
    optimizer.step()
    after = layer.state_dict()
    theirs_after = upstream_to_ours(fx["after_step"])
    for name, value in theirs_after.items():
        if name.endswith(".bias") and name.startswith("convs."):
            continue  # compared with its weight below (it moved by lr x a round-off gradient)
        ours = after[name]
        if name.endswith("lin.weight"):
            bias = name.replace("lin.weight", "bias")
            ours, value = torch.cat([ours.flatten(), after[bias]]), torch.cat([value.flatten(), theirs_after[bias]])
            name = name.removesuffix(".lin.weight") + " (weight, bias)"
        parity.compare(f"after_step/{name}", ours, value)
