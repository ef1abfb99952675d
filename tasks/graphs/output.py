"""`GraphModelOutput`: what every graph model in this task returns, so one LightningModule trains them all."""

from __future__ import annotations

from dataclasses import dataclass, field

from torch import Tensor

from zoo.moe.routing import Routing


@dataclass
class GraphModelOutput:
    """Predictions plus the MoE internals the loss and the diagnostics read.

    Shapes (T items: nodes for node classification, graphs for graph classification; C classes; E experts):
        log_probs: (T, C) log class probabilities of the model's final prediction.
        aux_loss: scalar, already weighted, added to the task loss (0 for dense models).
        aux: name -> unweighted scalar aux losses, for logging.
        routing: the routing of the layer the diagnostics describe (the prediction-level router of C2GMoE,
            the last MoE layer of GMoE), or None for dense models.
        expert_outputs: (E, T', D) every expert's output at that layer (computed densely), or None. T' = T
            when experts emit per-item predictions; T' = nodes when GMoE routes nodes of graph-level tasks.
        expert_log_probs: (E, T, C) each expert's own log class probabilities (C2GMoE only), else None.
        fusion_weights: (T, E) final combine weights (C2GMoE: router x confidence), else None.
    """

    log_probs: Tensor
    aux_loss: Tensor
    aux: dict[str, Tensor] = field(default_factory=dict)
    routing: Routing | None = None
    expert_outputs: Tensor | None = None
    expert_log_probs: Tensor | None = None
    fusion_weights: Tensor | None = None
