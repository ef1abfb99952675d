"""MAMMOTH layer (tasks/mil/mammoth.py): Soft-MoE slot softmax axes and routing, the parameter budget, padding,
and equality with the published mammoth-moe package."""

from __future__ import annotations

import pytest
import torch

from zoo.errors import ConfigError
from zoo_tasks.mil.mammoth import Mammoth, budget_rank, linear_num_params, mammoth_num_params


def _count(module: torch.nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


def _padded_batch(seed: int = 0):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(3, 7, 20, generator=gen)
    mask = torch.ones(3, 7, dtype=torch.bool)
    mask[0, 4:] = False
    mask[2, 1:] = False  # a single-instance bag
    return x, mask


def test_dispatch_sums_to_one_over_instances_and_combine_over_expert_slots():
    torch.manual_seed(0)
    layer = Mammoth(20, 16, num_experts=3, num_slots=2, num_heads=2, slot_dim=8).eval()
    x, mask = _padded_batch()
    _, routing, dispatch, combine = layer(x, mask)  # (B, N, H, E, S) each
    torch.testing.assert_close(dispatch.sum(dim=1), torch.ones(3, 2, 3, 2))
    assert dispatch[~mask].abs().max() == 0  # padding is never dispatched to a slot
    assert not torch.allclose(dispatch.sum(dim=3), torch.ones_like(dispatch.sum(dim=3)))  # not the expert axis
    torch.testing.assert_close(combine[mask].sum((-2, -1)), torch.ones(int(mask.sum()), 2))
    assert combine[~mask].abs().max() == 0
    assert torch.all(dispatch[2, 0] == 1)  # one instance takes every slot's whole dispatch weight
    assert routing.num_tokens == 21 and routing.num_experts == 3
    torch.testing.assert_close(routing.router_probs()[mask.reshape(-1)].sum(-1), torch.ones(int(mask.sum())))


@pytest.mark.parametrize("shared_down", [True, False])
@pytest.mark.parametrize(
    ("in_dim", "out_dim", "experts", "slots", "heads", "slot_dim"),
    [(166, 128, 8, 4, 4, 64), (230, 128, 8, 4, 4, 64), (1024, 512, 30, 10, 16, 256)],
)
def test_rank_matches_linear_parameter_budget(in_dim, out_dim, experts, slots, heads, slot_dim, shared_down):
    args = (in_dim, out_dim, experts, slots, heads, slot_dim)
    layer = Mammoth(*args, shared_down=shared_down)
    assert layer.rank == budget_rank(*args, shared_down=shared_down) >= 1
    assert _count(layer) == mammoth_num_params(*args, layer.rank, shared_down)
    budget = linear_num_params(in_dim, out_dim)
    assert budget == _count(torch.nn.Linear(in_dim, out_dim))
    gap = abs(_count(layer) - budget)
    for other in (layer.rank - 1, layer.rank + 1):
        if other >= 1:
            assert gap <= abs(mammoth_num_params(*args, other, shared_down) - budget)
    assert gap < 0.1 * budget


def test_budget_too_small_and_bad_shapes_raise():
    with pytest.raises(ConfigError, match="rank 1"):
        Mammoth(8, 8, num_experts=30, num_slots=10, num_heads=4, slot_dim=64)
    with pytest.raises(ConfigError, match="divisible"):
        Mammoth(20, 18, num_heads=4)
    with pytest.raises(ConfigError, match="in_dim=20"):
        Mammoth(20, 16, num_experts=3, num_slots=2, num_heads=2, slot_dim=8)(torch.randn(2, 3, 21))


def test_padding_does_not_change_real_instances():
    torch.manual_seed(0)
    layer = Mammoth(20, 16, num_experts=3, num_slots=2, num_heads=2, slot_dim=8).eval()
    x, mask = _padded_batch()
    batched = layer(x, mask).output
    for i in range(3):
        alone = layer(x[i, mask[i]]).output
        torch.testing.assert_close(batched[i, mask[i]], alone)
    assert batched[~mask].abs().max() == 0


def test_equals_published_mammoth_moe_with_the_same_weights():
    pkg = pytest.importorskip("mammoth")
    torch.manual_seed(0)
    e, s, h, slot_dim, rank = 3, 2, 2, 8, 4
    theirs = pkg.Mammoth(
        20,
        16,
        num_experts=e,
        num_slots=s,
        num_heads=h,
        slot_dim=slot_dim,
        lora_rank=rank,
        auto_rank=False,
        keep_slots=False,
        share_lora_weights=True,
    ).eval()
    ours = Mammoth(20, 16, num_experts=e, num_slots=s, num_heads=h, slot_dim=slot_dim, rank=rank).eval()
    lora = theirs.expert_heads.lora_layers
    with torch.no_grad():
        ours.query.weight.copy_(theirs.wq.weight)
        ours.query.bias.copy_(theirs.wq.bias)
        ours.query_norm.weight.copy_(theirs.norm.gamma)
        ours.slot_norm.weight.copy_(theirs.slot_norm.gamma)
        ours.slot_embeds.copy_(theirs.slot_embeds)
        ours.down.weight.copy_(lora.shared_weight)
        ours.down.bias.copy_(lora.shared_bias)
        ours.up.weight.copy_(lora.expert_weights.reshape(e * h, rank, -1))
        ours.up.bias.copy_(lora.bias.reshape(e * h, -1))
        ours.expert_norm.copy_(theirs.expert_heads.norm.gamma)
    x = torch.randn(1, 9, 20)
    expected, dispatch = theirs(x, return_weights=True)
    y, _, ours_dispatch, _ = ours(x)
    torch.testing.assert_close(y, expected, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(ours_dispatch.permute(0, 1, 3, 2, 4), dispatch)  # theirs: (B, N, E, H, S)
