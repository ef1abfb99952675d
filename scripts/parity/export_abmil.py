"""Export ABMIL / gated-ABMIL parity fixtures (AMLab-Amsterdam/AttentionDeepMIL, ``model.py`` ``Attention`` and
``GatedAttention``): attention weights, bag probabilities, ``calculate_objective`` loss, gradients and one Adam step
(``main.py``'s optimiser: lr 5e-4, betas (0.9, 0.999), weight decay 1e-4).

    python scripts/parity/export_abmil.py --upstream /tmp/upstream/abmil --commit SHA \
        --out tests/fixtures/parity/abmil_{attention,gated}.pt      (the file name picks the class)

Their classes hard-code widths M = 500, L = 128 and a LeNet feature extractor for 28x28 MNIST bags. To keep the
fixture small and compare the MIL part, ``feature_extractor_part1`` (the convolutions) is replaced by Identity,
so an instance is the 800-d flattened conv feature ``H.view(-1, 50 * 4 * 4)`` expects, and every nn.Linear of
width M = 500 is narrowed in place to M = 8 (same containers, activations and forward; L stays 128, as ours).
Bags: three bags of 5, 3 and 4 instances (ours pads them into one batch). The loss is the mean over the bags of
``calculate_objective``; a fourth, saturated bag (classifier bias +20, label 0) shows their probability clamp."""

from __future__ import annotations

import sys

import torch
from fixture_io import exported_with, exporter_args, grads_and_step, save_fixture
from torch import nn

M = 8
FEATURES = 50 * 4 * 4
SIZES = (5, 3, 4)
LABELS = (1.0, 0.0, 1.0)


def narrowed(model: nn.Module) -> nn.Module:
    """``model`` with the conv extractor removed and every Linear of width 500 rebuilt at width M."""
    model.feature_extractor_part1 = nn.Identity()
    model.M = M
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if isinstance(child, nn.Linear) and 500 in (child.in_features, child.out_features):
                fan_in = M if child.in_features == 500 else child.in_features
                fan_out = M if child.out_features == 500 else child.out_features
                setattr(parent, name, nn.Linear(fan_in, fan_out))
    return model


def main() -> None:
    args = exporter_args(__doc__.splitlines()[0])
    sys.path.insert(0, str(args.upstream))
    from model import Attention, GatedAttention

    gated = args.out.stem.endswith("gated")
    torch.manual_seed(0)
    model = narrowed(GatedAttention() if gated else Attention())
    state = {k: v.clone() for k, v in model.state_dict().items()}
    bags = [torch.randn(1, n, FEATURES) for n in SIZES]  # their loader gives (1, K, ...) bags
    optimizer = torch.optim.Adam(model.parameters(), lr=0.0005, betas=(0.9, 0.999), weight_decay=10e-5)
    probs, attention, losses = [], [], []
    for bag, label in zip(bags, LABELS):
        y_prob, _, a = model(bag)
        loss, _ = model.calculate_objective(bag, torch.tensor([label]))
        probs.append(y_prob.reshape(())), attention.append(a.reshape(-1)), losses.append(loss.reshape(()))
    loss = torch.stack(losses).mean()
    optimizer.zero_grad()
    loss.backward()
    grads, after = grads_and_step(model, optimizer)

    model.load_state_dict(state)  # the saturated bag: their Y_prob clamp caps the loss and stops the gradient
    with torch.no_grad():
        model.classifier[0].bias.fill_(20.0)
    model.zero_grad()
    sat_loss, _ = model.calculate_objective(bags[0], torch.tensor([0.0]))
    sat_loss.sum().backward()
    saturated = {"bias": 20.0, "label": 0.0, "loss": sat_loss.reshape(()),
                 "grad_classifier_weight": model.classifier[0].weight.grad.clone()}  # fmt: skip
    name = "GatedAttention" if gated else "Attention"
    save_fixture(
        args.out,
        {
            "meta": {
                "upstream": "AMLab-Amsterdam/AttentionDeepMIL",
                "commit": args.commit,
                "call": f"model.{name}(): Y_prob, Y_hat, A = model(bag); loss, A = model.calculate_objective(bag, "
                "label), per bag of (1, K, 800); mean over the 3 bags; backward; Adam step",
                "config": {
                    "M": M,
                    "L": 128,
                    "feature_extractor_part1": "Identity",
                    "bag_sizes": list(SIZES),
                    "labels": list(LABELS),
                    "gated": gated,
                },  # fmt: skip
                "optimizer": {"name": "Adam", "lr": 0.0005, "betas": [0.9, 0.999], "weight_decay": 10e-5},
                "exported_with": exported_with(),
            },
            "inputs": {"bags": [b.squeeze(0) for b in bags], "labels": torch.tensor(LABELS)},
            "state": state,
            "outputs": {"bag_prob": torch.stack(probs), "attention": attention, "bag_loss": torch.stack(losses)},
            "loss": loss,
            "grads": grads,
            "after_step": after,
            "saturated": saturated,
        },
    )


if __name__ == "__main__":
    main()
