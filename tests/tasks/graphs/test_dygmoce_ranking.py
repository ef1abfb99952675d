"""The ranking constraint: zero exactly for weights unimodal over curvature-ordered experts."""

from __future__ import annotations

import torch

from zoo_tasks.graphs.dynamic.ranking import is_unimodal, ranking_violation


def test_unimodal_weights_cost_nothing_and_a_second_peak_costs_its_rise():
    curv = torch.tensor([-1.0, 0.0, 1.0, 2.0])
    unimodal = torch.tensor([[0.1, 0.5, 0.3, 0.1], [0.7, 0.2, 0.05, 0.05], [0.1, 0.2, 0.3, 0.4]])
    assert ranking_violation(unimodal, curv) == 0
    assert is_unimodal(unimodal, curv).all()
    two_peaks = torch.tensor([[0.4, 0.1, 0.3, 0.2]])  # peak at 0, then rises 0.1 -> 0.3
    assert torch.isclose(ranking_violation(two_peaks, curv), torch.tensor(0.2))
    assert not is_unimodal(two_peaks, curv).any()


def test_order_follows_learned_curvature_not_expert_index():
    probs = torch.tensor([[0.4, 0.2, 0.4]])  # bimodal in index order
    assert ranking_violation(probs, torch.tensor([-1.0, 0.0, 1.0])) > 0
    # experts 0 and 2 are neighbours in curvature: sorted weights 0.2, 0.4, 0.4 are unimodal
    assert ranking_violation(probs, torch.tensor([0.5, -1.0, 1.0])) == 0


def test_penalty_has_gradient_and_ignores_padding():
    logits = torch.tensor([[2.0, -1.0, 2.5], [2.0, -1.0, 2.5]], requires_grad=True)  # both bimodal
    probs = torch.softmax(logits, dim=1)
    curv = torch.tensor([-1.0, 0.0, 1.0])
    loss = ranking_violation(probs, curv, valid=torch.tensor([True, False]))
    loss.backward()
    assert loss > 0 and logits.grad[0].abs().sum() > 0 and logits.grad[1].abs().sum() == 0
