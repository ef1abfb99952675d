"""`GraphModelOutput`: what every graph model in this task returns, so one LightningModule trains them all."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import torch
from torch import Tensor

from zoo.moe import Routing, weighted_aux_loss


@dataclass
class GraphModelOutput:
    """Predictions plus the mixture values the loss, the routing-stats callback and the diagnostics read.

    Shapes (T items: nodes for node classification, graphs for graph classification; C classes; E experts):
        log_probs: (T, C) log class probabilities of the model's final prediction.
        aux_loss: scalar, already weighted (``zoo.moe.weighted_aux_loss``), added to the task loss (0 for dense
            models).
        aux: name -> unweighted scalar aux losses, for logging.
        routings: mixture name -> its `Routing` (every routed mixture of the model, in forward order; empty for
            dense models). The diagnostics describe the last one (:attr:`routing`).
        expert_outputs: (T', E, D) every expert's output at that last mixture (computed densely), or None.
            T' = T when experts emit per-item predictions; T' = nodes when GMoE routes nodes of graph-level tasks.
        expert_log_probs: (E, T, C) each expert's own log class probabilities (C²GMoE only), else None.
        fusion_weights: (T, E) final combine weights (C²GMoE: router x confidence, renormalised), else None.
    """

    log_probs: Tensor
    aux_loss: Tensor
    aux: dict[str, Tensor] = field(default_factory=dict)
    routings: dict[str, Routing] = field(default_factory=dict)
    expert_outputs: Tensor | None = None
    expert_log_probs: Tensor | None = None
    fusion_weights: Tensor | None = None

    @property
    def routing(self) -> Routing | None:
        """The routing the diagnostics describe: the last mixture's (None for dense models)."""
        return next(reversed(self.routings.values())) if self.routings else None


@torch.no_grad()
def unweighted_aux(routings: Routing | Sequence[Routing] | Mapping[str, Routing], name: str) -> Tensor:
    """The unweighted aux loss ``name`` (mean over layers for several), for logging only."""
    return weighted_aux_loss(routings, {name: 1.0})
