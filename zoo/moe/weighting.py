"""`weighted_aux_loss`: the one function that turns routings and ``name -> weight`` into the aux loss to add.

Names: the plain loss functions of a `Routing` in ``zoo.moe.LOSSES`` ("load_balance", "z", "cv_squared",
"entropy"), losses a router attaches to ``routing.aux`` ("sparsity", "dirichlet_kl" from the Dirichlet router;
every router also attaches "load_balance" and "z") or a task attaches there (a method's own routing loss, e.g. a
contrastive routing term, so it is weighted by this same function), and "erc", which needs the layer's router rows
and experts and so is passed in precomputed (``MoE.aux_loss`` does this).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from torch import Tensor

from zoo.moe.errors import ConfigError
from zoo.moe.losses import LOSSES
from zoo.moe.routing import Routing

ROUTER_AUX = ("sparsity", "dirichlet_kl")  # produced by routers themselves (DirichletRouter)
AUX_NAMES: tuple[str, ...] = (*LOSSES, "erc", *ROUTER_AUX)


def check_aux_weights(
    weights: Mapping[str, float] | None, key: str = "aux_weights", extra: Sequence[str] = ()
) -> dict[str, float]:
    """A plain dict copy of ``weights``; raises ConfigError naming unknown names and the valid ones.

    ``extra``: names a task adds beside ``AUX_NAMES`` (losses it attaches to ``routing.aux`` itself)."""
    weights = dict(weights or {})
    valid = set(AUX_NAMES) | set(extra)
    unknown = sorted(set(weights) - valid)
    if unknown:
        raise ConfigError(f"{key}: unknown aux loss {unknown}; valid: {', '.join(sorted(valid))}")
    return weights


def _value(routing: Routing, name: str) -> Tensor:
    if name in routing.aux:
        return routing.aux[name]
    if name in LOSSES:
        return LOSSES[name](routing)
    raise ConfigError(
        f"aux loss {name!r} is not produced by this router; it produces: {', '.join(sorted(routing.aux))}; "
        f"any router: {', '.join(sorted(LOSSES))}"
    )


def weighted_aux_loss(
    routings: Routing | Sequence[Routing] | Mapping[str, Routing],
    weights: Mapping[str, float],
    erc: Tensor | None = None,
) -> Tensor:
    """``sum_name weights[name] * loss_name``, a scalar tensor (float32, on the routing's device).

    ``routings``: one `Routing`, or a sequence of them (one per layer) or a ``{layer_name: Routing}`` mapping (what
    a step returns as ``outputs["routing"]``): then each named loss is the mean over the layers,
    ``loss_name = sum_l loss_name(routing_l) / L``. A name found in ``routing.aux`` (computed by the router) is
    taken from there, else computed by ``zoo.moe.LOSSES[name]``. Zero weights are skipped; names are
    summed in the order of ``weights``. ``erc``: the unweighted ERC loss (``MoE.erc_loss()``, mean over layers for
    a sequence), required when ``weights`` gives "erc" a non-zero weight.
    Raises ConfigError for an unknown name (listing the valid ones), a name this router does not produce, or a
    missing ``erc``.
    """
    if isinstance(routings, Routing):
        layers = [routings]
    elif isinstance(routings, Mapping):
        layers = list(routings.values())
    else:
        layers = list(routings)
    if not layers:
        raise ValueError("weighted_aux_loss needs at least one Routing")
    weights = check_aux_weights(weights, extra=[name for r in layers for name in r.aux])
    first = layers[0].logits
    total = first.new_zeros((), dtype=first.dtype if first.is_floating_point() else None)
    for name, w in weights.items():
        if not w:
            continue
        if name == "erc":
            if erc is None:
                raise ConfigError("aux loss 'erc' needs the layer's router and experts: use MoE.aux_loss(routing)")
            value = erc
        elif len(layers) == 1:
            value = _value(layers[0], name)
        else:
            value = total.new_zeros(())
            for r in layers:
                value = value + _value(r, name)
            value = value / len(layers)
        total = total + w * value.to(total.dtype)
    return total
