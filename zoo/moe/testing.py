"""Checks a task (or a plugin author) runs on a model with a mixture: one training step with a given router.

Used by the conformance suite (``python -m zoo.conformance TASK``: every task x every router in ``zoo.moe.ROUTERS``,
the timm-style "every model x every config" test) and by a plugin's own tests::

    loss, routings = my_model.loss_and_routing(batch)
    check_router_step(my_model, loss, routings)
"""

from __future__ import annotations

import json
from collections.abc import Mapping

import torch
from torch import Tensor, nn

from zoo.moe.routing import Routing
from zoo.moe.stats import routing_summary


def check_router_step(model: nn.Module, loss: Tensor, routings: Mapping[str, Routing]) -> None:
    """Assert one training step through ``model``'s mixtures is sound; raises AssertionError naming what failed.

    - ``loss`` is a finite scalar;
    - at least one routing came back, each over at least one token, with finite logits and finite weights, and its
      ``zoo.moe.routing_summary`` (what the records carry) is JSON-able and counts real tokens;
    - ``loss.backward()`` gives a finite, non-zero gradient to at least one router parameter (a parameter whose
      name contains ``router``) - unless no router has parameters at all.
    """
    assert loss.ndim == 0, f"loss must be a scalar, got shape {tuple(loss.shape)}"
    assert torch.isfinite(loss), f"loss is not finite: {loss.item()}"
    assert routings, "the model returned no routing"
    for name, routing in routings.items():
        assert isinstance(routing, Routing), f"{name}: expected a Routing, got {type(routing).__name__}"
        assert routing.num_tokens > 0, f"{name}: routing over no tokens"
        assert torch.isfinite(routing.logits).all(), f"{name}: non-finite router logits"
        assert torch.isfinite(routing.weights).all(), f"{name}: non-finite combine weights"
    summary = routing_summary(routings).to_dict()
    json.dumps(summary)
    assert all(layer["tokens"] > 0 for layer in summary.values()), f"routing summary without real tokens: {summary}"
    model.zero_grad(set_to_none=True)
    loss.backward()
    router_params = [(n, p) for n, p in model.named_parameters() if "router" in n and p.requires_grad]
    if not router_params:
        return
    grads = {n: p.grad for n, p in router_params}
    assert all(g is None or torch.isfinite(g).all() for g in grads.values()), "non-finite router gradient"
    reached = [n for n, g in grads.items() if g is not None and g.abs().sum() > 0]
    assert reached, f"no gradient reached the router parameters {sorted(grads)}"
