"""weighted_aux_loss / MoE.aux_loss: the one weighting of aux losses (order, layer mean, erc, errors)."""

import pytest
import torch

from zoo.errors import ConfigError
from zoo.moe import AUX_NAMES, LOSSES, MoE, entropy_loss, make_router, weighted_aux_loss


def test_layer_aux_loss_is_the_weighted_sum():
    torch.manual_seed(0)
    layer = MoE(8, 12, 4, top_k=2, aux_weights={"load_balance": 0.5, "z": 0.1, "entropy": 0.2, "erc": 0.3})
    _, r = layer(torch.randn(10, 8))
    expected = 0.5 * r.aux["load_balance"] + 0.1 * r.aux["z"] + 0.2 * entropy_loss(r)
    torch.manual_seed(1)
    expected = expected + 0.3 * layer.erc_loss()
    torch.manual_seed(1)  # erc draws its proxy noise from the global RNG
    loss = layer.aux_loss(r)
    torch.testing.assert_close(loss, expected)
    loss.backward()
    assert layer.router.gate.weight.grad.abs().sum() > 0


def test_the_layer_and_the_function_agree_without_erc():
    torch.manual_seed(0)
    weights = {"load_balance": 0.5, "cv_squared": 0.25, "z": 0.0}
    layer = MoE(8, 12, 4, top_k=2, router="noisy_topk", aux_weights=weights)
    _, r = layer(torch.randn(10, 8))
    assert torch.equal(layer.aux_loss(r), weighted_aux_loss(r, weights))


def test_a_sequence_is_the_mean_over_layers():
    torch.manual_seed(0)
    routers = [make_router("topk", 6, 4), make_router("sigmoid_bias", 6, 4)]
    rs = [router(torch.randn(9, 6)) for router in routers]
    w = {"load_balance": 0.3, "cv_squared": 2.0}
    expected = sum(weighted_aux_loss(r, w) for r in rs) / 2
    torch.testing.assert_close(weighted_aux_loss(rs, w), expected)
    torch.testing.assert_close(weighted_aux_loss(rs[:1], w), weighted_aux_loss(rs[0], w))
    assert torch.equal(weighted_aux_loss({"a": rs[0], "b": rs[1]}, w), weighted_aux_loss(rs, w))  # a step's dict


def test_router_aux_names_come_from_the_routing():
    torch.manual_seed(0)
    layer = MoE(8, 12, 4, top_k=2, router="dirichlet", aux_weights={"sparsity": 1.0, "dirichlet_kl": 0.1})
    _, r = layer(torch.randn(6, 8))
    torch.testing.assert_close(layer.aux_loss(r), r.aux["sparsity"] + 0.1 * r.aux["dirichlet_kl"])
    assert layer.aux_loss(r) > 0


def test_errors_name_the_valid_choices():
    r = make_router("topk", 6, 4)(torch.randn(5, 6))
    with pytest.raises(ConfigError, match="unknown aux loss \\['nope'\\]; valid: .*load_balance"):
        weighted_aux_loss(r, {"nope": 1.0})
    with pytest.raises(ConfigError, match="not produced by this router.*load_balance, z"):
        weighted_aux_loss(r, {"sparsity": 1.0})
    with pytest.raises(ConfigError, match="erc.*MoE.aux_loss"):
        weighted_aux_loss(r, {"erc": 1.0})
    assert float(weighted_aux_loss(r, {"erc": 0.0, "sparsity": 0.0})) == 0.0  # zero weights are skipped
    assert set(LOSSES) < set(AUX_NAMES) and "erc" in AUX_NAMES


def test_a_task_loss_attached_to_the_routing_is_weighted_by_the_same_function():
    from dataclasses import replace

    torch.manual_seed(0)
    _, r = MoE(8, 12, 4, top_k=2)(torch.randn(10, 8))
    own = r.router_probs().pow(2).mean()
    with pytest.raises(ConfigError, match="contrastive"):
        weighted_aux_loss(r, {"contrastive": 1.0})  # not attached: unknown here
    tagged = replace(r, aux={**r.aux, "contrastive": own})
    loss = weighted_aux_loss(tagged, {"load_balance": 0.5, "contrastive": 0.1})
    assert torch.equal(loss, torch.zeros(()) + 0.5 * r.aux["load_balance"] + 0.1 * own)
