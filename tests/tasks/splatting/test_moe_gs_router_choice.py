"""Which zoo.moe routers may gate MoE-GS's per-pixel expert blend: those whose weights sum to 1, so that the blend is a
convex combination of the experts' renders; the others are refused, naming why and the routers that apply. (Every
router trained through the real module: the conformance suite.)"""

from __future__ import annotations

import pytest
import torch
from test_moe_gs_moe import make_batch, make_exports

import zoo.moe
from zoo.errors import ConfigError
from zoo_tasks.splatting.moe import MoEGS
from zoo_tasks.splatting.router import require_convex_weights

APPLIES = zoo.moe.routers_that_apply(("per_token_choice", "convex_weights"))


@pytest.mark.parametrize("router", [*APPLIES, "moe_gs"])
def test_the_blend_is_a_convex_combination_of_the_renders(tmp_path, router):
    torch.manual_seed(0)
    moe = MoEGS(experts=make_exports(tmp_path, n=20), router=router, top_k=2, backend="tiles")
    _, routings = moe.loss_and_routing(make_batch(size=8))
    routing = routings["pixel_router"]
    sums = torch.where(routing.indices >= 0, routing.weights, 0.0).sum(-1)
    torch.testing.assert_close(sums, torch.ones_like(sums))


def test_routers_whose_weights_need_not_sum_to_one_are_refused(tmp_path):
    exports = make_exports(tmp_path, n=20)
    with pytest.raises(ConfigError, match=r"'kern' cannot route MoE-GS's per-pixel .* must sum to 1") as err:
        MoEGS(experts=exports, router="kern")
    assert str(err.value).endswith(f"routers that apply: {', '.join(APPLIES)}")
    with pytest.raises(ConfigError, match=r"'sigmoid_bias' .* summed to 2.50..2.50"):
        MoEGS(experts=exports, router="sigmoid_bias", router_kwargs={"route_scale": 2.5})


def test_the_weight_probe_leaves_the_global_rng_and_the_router_state_alone():
    gate = zoo.moe.make_router("dtop_p", 8, 3)
    threshold = gate.threshold.clone()
    torch.manual_seed(3)
    expected = torch.rand(4)
    torch.manual_seed(3)
    require_convex_weights(gate, "dtop_p", 8)
    assert torch.equal(torch.rand(4), expected)
    assert torch.equal(gate.threshold, threshold) and gate.training
