"""ABMIL and gated ABMIL (mammoth task's baselines) equal the authors' ``Attention`` / ``GatedAttention``
(AMLab-Amsterdam/AttentionDeepMIL, ``model.py``) with the same weights: per-bag attention weights, bag
probabilities, their ``calculate_objective`` loss averaged over three bags (ours: one padded batch), every gradient
and one Adam step with their ``main.py`` settings (fixtures from ``scripts/parity/export_abmil.py``).

Our MILModule's linear projection (Linear + ReLU) is their ``feature_extractor_part2``; their conv extractor is
left out (instances are its 800-d output). Pinned difference: they clamp the bag probability to [1e-5, 1 - 1e-5]
before the log, so a confidently wrong bag's loss stops at -log(1e-5) = 11.5 with zero gradient; ours is BCE on the
logit, unclamped. Tolerance 1e-5 relative (fp32). The attention-score bias ``w.bias`` has a gradient of 0 by
symmetry (softmax over instances): compared against the largest gradient, left out of the step (``parity_steps``)."""

from __future__ import annotations

import pytest
import torch
from parity_steps import compare_gradients_and_step

from zoo_tasks.mil.module import MILModule

RENAMES = {  # their parameter prefix -> ours
    "feature_extractor_part2.0.": "projection.0.",
    "attention.0.": "aggregator.V.",
    "attention.2.": "aggregator.w.",
    "attention_V.0.": "aggregator.V.",
    "attention_U.0.": "aggregator.U.",
    "attention_w.": "aggregator.w.",
    "classifier.0.": "aggregator.classifier.",
}
CASES = {"abmil_attention": ("abmil", "ABMIL"), "abmil_gated": ("gated_abmil", "gated-ABMIL")}


def ours_names(theirs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Their state dict / gradients under our MILModule's parameter names."""
    out = {}
    for key, value in theirs.items():
        prefix = next(p for p in RENAMES if key.startswith(p))
        out[RENAMES[prefix] + key.removeprefix(prefix)] = value
    return out


def build(fx: dict, aggregator: str) -> MILModule:
    config = fx["meta"]["config"]
    model = MILModule(in_dim=800, aggregator=aggregator, projection="linear", dim=config["M"], dropout=0.0)
    assert model.aggregator.V.out_features == config["L"]
    model.load_state_dict(ours_names(fx["state"]), strict=True)
    return model


def padded(bags: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """Bags (K_i, D) -> x (B, max K, D) zero-padded, mask (B, max K)."""
    n = max(len(b) for b in bags)
    x = torch.zeros(len(bags), n, bags[0].shape[1])
    mask = torch.zeros(len(bags), n, dtype=torch.bool)
    for i, b in enumerate(bags):
        x[i, : len(b)], mask[i, : len(b)] = b, True
    return x, mask


@pytest.mark.parametrize("fixture", sorted(CASES))
def test_attention_probability_loss_gradients_and_one_adam_step_equal_theirs(parity, fixture):
    fx = parity.load(fixture)
    aggregator, method = CASES[fixture]
    parity.describe(
        method=method,
        task="mammoth",
        compared="attention weights, bag probabilities, calculate_objective loss (3 bags), gradients, one Adam step",
    )
    model = build(fx, aggregator)
    opt = fx["meta"]["optimizer"]
    optimizer = torch.optim.Adam(model.parameters(), lr=opt["lr"], betas=opt["betas"], weight_decay=opt["weight_decay"])
    x, mask = padded(fx["inputs"]["bags"])
    out = model(x, mask)
    parity.compare("bag probability", torch.sigmoid(out.logits), fx["outputs"]["bag_prob"])
    for i, theirs in enumerate(fx["outputs"]["attention"]):
        parity.compare(f"attention/bag{i}", out.scores[i, : len(theirs)], theirs)
        assert (out.scores[i, len(theirs) :] == 0).all()  # padding gets no attention
    loss = model.step_loss({"x": x, "mask": mask, "y": fx["inputs"]["labels"]}).loss
    parity.compare("loss (mean over bags)", loss, fx["loss"])
    optimizer.zero_grad()
    loss.backward()
    compare_gradients_and_step(
        parity,
        dict(model.named_parameters()),
        optimizer,
        ours_names(fx["grads"]),
        ours_names(fx["after_step"]),
        symmetric_zero={"aggregator.w.bias": slice(0, 1)},
    )


@pytest.mark.parametrize("fixture", sorted(CASES))
def test_their_probability_clamp_caps_a_saturated_bags_loss_and_gradient(parity, fixture):
    fx = parity.load(fixture)
    aggregator, method = CASES[fixture]
    parity.describe(method=method, task="mammoth", compared="saturated bag: loss and gradient (probability clamp)")
    model = build(fx, aggregator)
    sat = fx["saturated"]
    with torch.no_grad():
        model.aggregator.classifier.bias.fill_(sat["bias"])
    x, mask = padded(fx["inputs"]["bags"][:1])
    loss = model.step_loss({"x": x, "mask": mask, "y": torch.tensor([sat["label"]])}).loss
    loss.backward()
    why = "theirs clamps Y_prob to [1e-5, 1-1e-5] (loss capped at 11.5, zero gradient); ours: BCE on the logit"
    parity.differs("saturated bag loss", loss, sat["loss"], at_least=0.1, why=why)
    # and the gradient: exactly 0 in theirs (the clamp), not in ours
    assert float(sat["grad_classifier_weight"].abs().max()) == 0.0
    assert float(model.aggregator.classifier.weight.grad.abs().max()) > 1e-3
