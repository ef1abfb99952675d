"""Aux losses: known values, padding never counts, gradients flow where they should."""

import math

import pytest
import torch

from zoo.moe import (
    Routing,
    cv_squared_loss,
    entropy_loss,
    erc_loss,
    load_balance_loss,
    make_experts,
    make_router,
    z_loss,
)

ROUTING_LOSSES = [load_balance_loss, z_loss, cv_squared_loss, entropy_loss]


def test_load_balance_is_one_when_uniform_and_e_when_collapsed():
    E, T = 4, 8
    uniform = Routing(torch.arange(T)[:, None] % E, torch.ones(T, 1), torch.zeros(T, E))
    assert float(load_balance_loss(uniform)) == pytest.approx(1.0)
    logits = torch.full((T, E), -30.0)
    logits[:, 0] = 30.0
    collapsed = Routing(torch.zeros(T, 1, dtype=torch.long), torch.ones(T, 1), logits)
    assert float(load_balance_loss(collapsed)) == pytest.approx(E, rel=1e-4)


def test_z_loss_and_entropy_values():
    logits = torch.zeros(3, 4)
    r = Routing(torch.zeros(3, 1, dtype=torch.long), torch.ones(3, 1), logits)
    assert float(z_loss(r)) == pytest.approx(math.log(4) ** 2)
    assert float(entropy_loss(r)) == pytest.approx(math.log(4))


@pytest.mark.parametrize("loss", ROUTING_LOSSES)
@pytest.mark.parametrize("router", ["topk", "noisy_topk", "sigmoid_bias", "kern"])
def test_padding_is_excluded_from_losses(loss, router):
    torch.manual_seed(0)
    r = make_router(router, 8, 5, top_k=2).eval()
    x = torch.randn(12, 8)
    valid = torch.rand(12) > 0.4
    garbage = x.clone()
    garbage[~valid] = 100 * torch.randn(int((~valid).sum()), 8)  # padding content must not matter
    full = loss(r(garbage, valid=valid))
    subset = loss(r(x[valid]))
    torch.testing.assert_close(full, subset)


def test_cv_squared_uses_the_noisy_topk_smooth_load():
    torch.manual_seed(0)
    router = make_router("noisy_topk", 8, 6, top_k=2).train()
    torch.nn.init.normal_(router.gate.weight)
    r = router(torch.randn(30, 8))
    cv_squared_loss(r).backward()
    assert router.noise.weight.grad.abs().sum() > 0  # only the smooth load estimator reaches Wnoise


def test_erc_loss_is_zero_for_perfect_coupling_and_has_gradients():
    E, d = 4, 4
    bank = make_experts("linear", E, d, d)
    with torch.no_grad():  # expert e responds only to direction e: perfectly coupled to router row e
        bank.weight.zero_()
        bank.bias.zero_()
        for e in range(E):
            bank.weight[e, e, e] = 1.0
    router_w = torch.eye(E, d, requires_grad=True)
    assert float(erc_loss(router_w, bank, noise_std=0.0)) == 0.0
    shuffled = make_experts("ffn", E, d, 8)
    loss = erc_loss(router_w, shuffled, noise_std=0.1, alpha=0.5)
    loss.backward()
    assert loss > 0 and router_w.grad.abs().sum() > 0 and shuffled.w1.grad.abs().sum() > 0


def test_empty_slots_never_hide_a_real_selection():
    idx = torch.tensor([[0, -1], [-1, 0], [1, -1]])
    r = Routing(idx, torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]]), torch.zeros(3, 2))
    torch.testing.assert_close(r.selected(), torch.tensor([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]]))
    torch.testing.assert_close(r.dense_weights(), r.selected())
