"""MAMMOTH's routing in MILModule: padded instances of a bag never count in its routing, and router settings that do
not apply to its Soft-MoE slots are refused by name. (Every zoo.moe router on MAMMOTH: the conformance suite.)"""

from __future__ import annotations

import pytest
import torch

from zoo.errors import ConfigError
from zoo.moe import routing_summary
from zoo_tasks.mil.module import MILModule

TINY = dict(in_dim=12, projection="mammoth", dim=8, num_experts=3, num_slots=2, num_heads=2, slot_dim=8, rank=2)


def test_padding_never_counts_in_the_routing():
    gen = torch.Generator().manual_seed(0)
    mask = torch.ones(3, 5, dtype=torch.bool)
    mask[1, 3:] = False  # bag 1 holds 3 instances, padded to 5
    batch = {"x": torch.randn(3, 5, 12, generator=gen), "mask": mask, "y": torch.tensor([0.0, 1.0, 1.0])}
    torch.manual_seed(0)
    out = MILModule(router="soft", plot_bags=0, **TINY).train().training_step(batch, 0)
    summary = routing_summary(out["routing"]).layers["projection"]
    assert summary.num_experts == 3 and summary.tokens == int(mask.sum())


def test_unknown_router_and_router_kwargs_raise():
    with pytest.raises(ConfigError, match="unknown router 'nope'"):
        MILModule(router="nope", **TINY)
    with pytest.raises(ConfigError, match="router_kwargs"):
        MILModule(router="soft", router_kwargs={"temperature": 2.0}, **TINY)
