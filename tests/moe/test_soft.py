"""Soft-MoE slots (zoo.moe.soft): the batched layer equals a per-bag, per-slot loop; padding gets no dispatch mass and
no output; dispatch sums to 1 over real tokens and combine over slots; the Routing's expert mass."""

from __future__ import annotations

import pytest
import torch

from zoo.moe.routing import Routing
from zoo.moe.soft import slot_routing, slot_weights, soft_moe

B, N, H, E, S, D, OUT = 3, 6, 2, 4, 3, 5, 7


def _inputs(seed: int = 0):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(B, N, H, D, generator=gen)
    logits = 2 * torch.randn(B, N, H, E, S, generator=gen)
    valid = torch.ones(B, N, dtype=torch.bool)
    valid[0, 4:] = False
    valid[2, 1:] = False  # a single-token bag
    weight = torch.randn(E, H, D, OUT, generator=gen)
    return x, logits, valid, weight


def _experts(weight):
    """Expert e, head h: a tanh-linear map applied to each slot, (E, H, B, S, D) -> (E, H, B, S, OUT)."""
    return lambda slots: torch.tanh(torch.einsum("ehbsd,ehdo->ehbso", slots, weight))


def _loop_reference(x, logits, valid, weight):
    """The paper's Eqs. 1-3 one bag, head and slot at a time, on the real tokens only."""
    y = torch.zeros(B, N, H, OUT)
    for b in range(B):
        real = valid[b].nonzero().flatten()
        for h in range(H):
            slot_out = torch.zeros(E, S, OUT)
            for e in range(E):
                for s in range(S):
                    d = torch.softmax(logits[b, real, h, e, s], dim=0)
                    slot_out[e, s] = torch.tanh((d[:, None] * x[b, real, h]).sum(0) @ weight[e, h])
            for n in real:
                c = torch.softmax(logits[b, n, h].reshape(-1), dim=0).view(E, S)
                y[b, n, h] = (c[..., None] * slot_out).sum((0, 1))
    return y


def test_soft_moe_equals_a_per_bag_per_slot_loop():
    x, logits, valid, weight = _inputs()
    y, routing, dispatch, combine = soft_moe(x, logits, _experts(weight), valid)
    torch.testing.assert_close(y, _loop_reference(x, logits, valid, weight), rtol=1e-5, atol=1e-6)
    assert isinstance(routing, Routing)


def test_padding_gets_no_dispatch_mass_and_no_output_and_does_not_change_real_tokens():
    x, logits, valid, weight = _inputs()
    y, _, dispatch, combine = soft_moe(x, logits, _experts(weight), valid)
    assert dispatch[~valid].abs().max() == 0 and combine[~valid].abs().max() == 0
    assert y[~valid].abs().max() == 0
    junk = x.clone()
    junk[~valid] = 1e3  # whatever sits in the padding must not leak into real tokens
    big_logits = logits.clone()
    big_logits[~valid] = 50.0
    y2 = soft_moe(junk, big_logits, _experts(weight), valid).output
    torch.testing.assert_close(y2[valid], y[valid])
    assert torch.all(dispatch[2, 0] == 1)  # a bag's only token takes every slot's whole dispatch weight


def test_dispatch_columns_sum_to_one_over_real_tokens_and_combine_rows_over_slots():
    _, logits, valid, _ = _inputs()
    dispatch, combine = slot_weights(logits, valid)
    torch.testing.assert_close(dispatch.sum(1), torch.ones(B, H, E, S))
    torch.testing.assert_close(combine[valid].sum((-2, -1)), torch.ones(int(valid.sum()), H))
    assert not torch.allclose(dispatch.sum((-2, -1)), torch.ones(B, N, H))  # dispatch is not over slots
    dispatch_all, _ = slot_weights(logits)  # no mask: every position is a token
    torch.testing.assert_close(dispatch_all.sum(1), torch.ones(B, H, E, S))
    assert dispatch_all[0, 5].abs().sum() > 0


def test_a_bag_without_real_tokens_gets_zeros_not_nan():
    _, logits, valid, _ = _inputs()
    valid[1] = False
    dispatch, combine = slot_weights(logits, valid)
    assert torch.isfinite(dispatch).all() and dispatch[1].abs().max() == 0 and combine[1].abs().max() == 0


def test_routing_holds_each_tokens_combine_mass_per_expert():
    x, logits, valid, weight = _inputs()
    _, routing, _, combine = soft_moe(x, logits, _experts(weight), valid)
    assert routing.num_tokens == B * N and routing.num_experts == E
    torch.testing.assert_close(routing.token_mask(), valid.reshape(-1))
    probs = routing.router_probs()
    torch.testing.assert_close(probs[routing.token_mask()].sum(-1), torch.ones(int(valid.sum())))
    assert probs[~routing.token_mask()].abs().max() == 0
    torch.testing.assert_close(probs.view(B, N, E)[1, 2, 3], combine[1, 2, :, 3].sum(-1).mean())
    torch.testing.assert_close(routing.dense_weights(), probs)  # every token uses every expert
    real = valid.reshape(-1)
    torch.testing.assert_close(torch.softmax(routing.logits, -1)[real], probs[real])
    assert torch.isfinite(routing.logits).all()
    one_head = slot_routing(logits[:, :, :1], combine[:, :, :1], valid)  # H = 1: logsumexp over slots, shifted
    lse = torch.logsumexp(logits[:, :, 0], dim=-1).reshape(B * N, E)[real]
    torch.testing.assert_close(one_head.logits[real] - one_head.logits[real, :1], lse - lse[:, :1])


def test_single_head_input_and_gradients_reach_the_logits():
    x, logits, valid, weight = _inputs()
    logits = logits[:, :, 0].clone().requires_grad_()
    y, routing, dispatch, _ = soft_moe(x[:, :, 0], logits, _experts(weight[:, :1]), valid)
    assert y.shape == (B, N, OUT) and dispatch.shape == (B, N, 1, E, S)
    y.square().sum().backward()
    assert torch.isfinite(logits.grad).all() and logits.grad[valid].abs().sum() > 0
    assert logits.grad[~valid].abs().max() == 0
    with pytest.raises(ValueError, match="share"):
        soft_moe(x, logits[:, :3], _experts(weight), valid)
