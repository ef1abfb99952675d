"""routing_summary: known values, padding never counts, steps merge like one big step, JSON-able."""

import json

import pytest
import torch

from zoo.moe import MoE, Routing, RoutingSummary, make_router, routing_summary


def test_known_values():
    E = 4
    idx = torch.tensor([[0, 1], [0, 1], [0, -1], [2, 0]])
    r = Routing(idx, torch.ones(4, 2), torch.zeros(4, E), stats={"dropped": torch.tensor(1), "dropped_tokens": 0})
    s = routing_summary({"l": r}).layers["l"]
    assert s.load == pytest.approx([4 / 7, 2 / 7, 1 / 7, 0.0])
    assert s.dead_experts == 1 and s.dropped == 1 and s.dropped_tokens == 0 and s.tokens == 4
    assert s.entropy == pytest.approx(1.0)  # uniform router probabilities
    assert s.max_over_mean_load == pytest.approx((4 / 7) / 0.25)
    load = torch.tensor(s.load[:3])
    assert s.load_entropy == pytest.approx(float(-(load * load.log()).sum() / torch.log(torch.tensor(4.0))))


def test_padding_is_excluded():
    torch.manual_seed(0)
    r = make_router("topk", 8, 5, top_k=2)
    x = torch.randn(12, 8)
    valid = torch.rand(12) > 0.4
    garbage = x.clone()
    garbage[~valid] = 100.0
    a = routing_summary({"m": r(garbage, valid=valid)}).to_dict()
    b = routing_summary({"m": r(x[valid])}).to_dict()
    assert a == b and a["m"]["tokens"] == int(valid.sum())


def test_merged_steps_equal_one_step_over_all_tokens():
    torch.manual_seed(0)
    layer = MoE(8, 12, 6, top_k=2, capacity_factor=0.6).eval()
    xs = [torch.randn(10, 8), torch.randn(7, 8)]
    acc = RoutingSummary()
    for x in xs:
        acc.add({"moe": layer(x).routing})
    merged = acc.layers["moe"]  # capacity applies per step: compare with the sum of the steps
    steps = [routing_summary({"moe": layer(x).routing}).layers["moe"] for x in xs]
    assert merged.counts == [a + b for a, b in zip(steps[0].counts, steps[1].counts, strict=True)]
    assert merged.tokens == 17 and merged.steps == 2 and merged.dropped == steps[0].dropped + steps[1].dropped
    assert merged.dropped > 0
    assert merged.entropy == pytest.approx((steps[0].entropy * 10 + steps[1].entropy * 7) / 17)
    # without a capacity limit routing is per token, so two steps equal one step over the same tokens
    free = MoE(8, 12, 6, top_k=2).eval()
    two = routing_summary(free(xs[0]).routing).merge(routing_summary(free(xs[1]).routing))
    one = routing_summary(free(torch.cat(xs)).routing)
    d2, d1 = two.to_dict()["moe"], one.to_dict()["moe"]
    assert d2.pop("steps") == 2 and d1.pop("steps") == 1
    assert d2 == pytest.approx(d1)


def test_to_dict_is_json_and_carries_router_extras():
    torch.manual_seed(0)
    layer = MoE(8, 12, 6, top_k=2, router="dtop_p")
    s = routing_summary({"a": layer(torch.randn(9, 8)).routing, "b": layer(torch.randn(5, 8)).routing})
    d = json.loads(json.dumps(s.to_dict()))
    assert set(d) == {"a", "b"} and d["b"]["tokens"] == 5 and len(d["a"]["load"]) == 6
    keys = {"load", "entropy", "load_entropy", "max_over_mean_load", "dead_experts", "dropped", "dropped_tokens"}
    assert keys | {"tokens", "steps", "num_experts"} <= set(d["a"])
    assert 1.0 <= d["a"]["extra"]["mean_active"] <= 6.0


def test_merge_refuses_different_expert_counts():
    a = routing_summary(Routing(torch.zeros(2, 1, dtype=torch.long), torch.ones(2, 1), torch.zeros(2, 3)))
    b = routing_summary(Routing(torch.zeros(2, 1, dtype=torch.long), torch.ones(2, 1), torch.zeros(2, 4)))
    with pytest.raises(ValueError, match="3 and 4 experts"):
        a.merge(b)


def test_dense_routing_load_follows_the_mixture_weight_not_the_slot_count():
    """Every token uses every expert (combine_dense, soft slots): equal slot counts would always read "balanced"."""
    E = 4
    weights = torch.tensor([[0.7, 0.1, 0.1, 0.1]] * 3 + [[0.1, 0.7, 0.1, 0.1]])
    dense = Routing(torch.arange(E).repeat(4, 1), weights, weights.log())
    layer = routing_summary({"gate": dense}).layers["gate"]
    assert layer.load == pytest.approx([2.2 / 4, 1.0 / 4, 0.4 / 4, 0.4 / 4])
    assert layer.load_entropy < 0.95 and layer.dead_experts == 0
    off = torch.tensor([[0.5, 0.5, 0.0, 0.0]] * 4)
    assert routing_summary({"g": Routing(torch.arange(E).repeat(4, 1), off, off)}).layers["g"].dead_experts == 2
    sparse = Routing(torch.tensor([[0, 1]] * 4), torch.tensor([[0.9, 0.1]] * 4), torch.zeros(4, E))
    assert routing_summary({"s": sparse}).layers["s"].counts == [4, 4, 0, 0]  # sparse: slots, as before
