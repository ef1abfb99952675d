"""Parity of SPHERE's Parseval penalty (``zoo_tasks.rl.continual.sphere``) with the authors' JAX code
(sphere-rl/sphere ``src/algorithms/moe/sphere.py``: ``sphere_feature_loss``, ``sphere_output_loss``), fixture from
``scripts/parity/export_sphere.py``.

For top-2-of-3 gate weights (T, E) and expert features (T, E, H): the routed features Phi, the penalty and its
gradients with respect to the gate weights, the features and Phi, in both branches of the penalty (D = E * H = 12
against T = 24: ``Phi^T Phi / T``; against T = 8: ``Phi Phi^T / T``), and the gating variant on the gate weights.
"""

from __future__ import annotations

import pytest
import torch

from zoo_tasks.rl.continual.sphere import parseval_penalty, penalty_value, routed_features

FIXTURE = "sphere"
CASES = ("tall", "wide")


def tensors(fx: dict, case: str) -> tuple[torch.Tensor, torch.Tensor]:
    x = fx["inputs"][case]
    probs = torch.tensor(x["probs"], requires_grad=True)
    features = torch.tensor(x["features"], requires_grad=True)
    return probs, features


@pytest.mark.parametrize("case", CASES)
def test_feature_penalty_and_gradients_equal(parity, case):
    """``penalty_value("sphere", w, h)``: Phi, the value, d/dw and d/dh; ``parseval_penalty``'s d/dPhi."""
    fx = parity.load(FIXTURE)
    probs, features = tensors(fx, case)
    parity.compare(f"{case}/phi", routed_features(probs, features), fx["outputs"][case]["phi"])
    value = penalty_value("sphere", probs, features)
    parity.compare(f"{case}/feature penalty", value, fx["loss"][case]["feature_penalty"])
    g_probs, g_features = torch.autograd.grad(value, (probs, features))
    theirs = fx["grads"][case]["feature_penalty"]
    parity.compare(f"{case}/grad wrt gate weights", g_probs, theirs["probs"])
    parity.compare(f"{case}/grad wrt features", g_features, theirs["features"])
    phi = torch.tensor(fx["outputs"][case]["phi"], requires_grad=True)
    (g_phi,) = torch.autograd.grad(parseval_penalty(phi), phi)
    parity.compare(f"{case}/grad wrt phi", g_phi, theirs["phi"])
    parity.describe(
        method="SPHERE",
        task="sphere",
        compared="Parseval penalty on routing-weighted expert features (D <= T and D > T branches) and its gating "
        "variant: values and gradients w.r.t. gate weights, features and Phi",
    )


@pytest.mark.parametrize("case", CASES)
def test_gating_penalty_and_gradient_equal(parity, case):
    """``penalty_value("gating", w, h)`` (the reference's ``sphere_output_loss``) and its gradient d/dw."""
    fx = parity.load(FIXTURE)
    probs, features = tensors(fx, case)
    value = penalty_value("gating", probs, features)
    parity.compare(f"{case}/gating penalty", value, fx["loss"][case]["gating_penalty"])
    (g_probs,) = torch.autograd.grad(value, probs)
    parity.compare(f"{case}/gating grad wrt gate weights", g_probs, fx["grads"][case]["gating_penalty"]["probs"])
