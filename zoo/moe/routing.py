"""`Routing`: the value every router returns; dispatch, aux losses and stats all read it.

`MoEOutput`: what a mixture returns, its output and the `Routing` that produced it (routing is a value, never
module state).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

import torch
from torch import Tensor


@dataclass
class Routing:
    """Which experts each token uses and with what weight.

    Shapes (T tokens, k slots per token, E experts):
        indices: (T, k) long, expert id per slot; -1 marks an empty slot (dropped by capacity, or unused
                 because the router picks a variable number of experts per token).
        weights: (T, k) combine weights; 0 where ``indices == -1``.
        logits:  (T, E) raw router scores (before softmax / sigmoid / noise).
        valid:   (T,) bool, False for padding tokens, or None when every token is real.
        probs:   (T, E) router probabilities that balance losses use (softmax of ``logits`` when None).
        load_prob: (T, E) smooth probability that expert e is selected for the token (Shazeer 2017's load
                 estimator for noisy top-k), or None to use hard counts.
        aux:     name -> scalar tensor, unweighted aux losses computed by the router.
        stats:   name -> detached 0-dim tensor (or number), diagnostics (e.g. dropped slot count). Kept as
                 tensors so that no forward waits for the device; ``zoo.moe.routing_summary`` converts them.
    """

    indices: Tensor
    weights: Tensor
    logits: Tensor
    valid: Tensor | None = None
    probs: Tensor | None = None
    load_prob: Tensor | None = None
    aux: dict[str, Tensor] = field(default_factory=dict)
    stats: dict[str, Any] = field(default_factory=dict)

    @property
    def num_tokens(self) -> int:
        return self.indices.shape[0]

    @property
    def num_experts(self) -> int:
        return self.logits.shape[-1]

    def router_probs(self) -> Tensor:
        """(T, E) float32 routing probabilities."""
        return self.probs if self.probs is not None else torch.softmax(self.logits.float(), dim=-1)

    def token_mask(self) -> Tensor:
        """(T,) bool, True for real tokens."""
        if self.valid is None:
            return torch.ones(self.num_tokens, dtype=torch.bool, device=self.indices.device)
        return self.valid.reshape(-1).bool()

    def selected(self) -> Tensor:
        """(T, E) float 0/1: expert e holds a (non-dropped) slot of token t."""
        sel = torch.zeros(self.num_tokens, self.num_experts, device=self.indices.device)
        keep = self.indices >= 0
        return sel.scatter_add_(1, self.indices.clamp(min=0), keep.float())  # add: -1 slots write 0 to col 0

    def dense_weights(self) -> Tensor:
        """(T, E) combine weights, 0 for experts a token does not use (differentiable in ``weights``)."""
        keep = self.indices >= 0
        dense = self.weights.new_zeros(self.num_tokens, self.num_experts)
        return dense.scatter_add(1, self.indices.clamp(min=0), torch.where(keep, self.weights, 0.0))

    def expert_counts(self) -> Tensor:
        """(E,) number of real tokens assigned to each expert (dropped slots and padding excluded)."""
        keep = (self.indices >= 0) & self.token_mask()[:, None]
        return torch.bincount(self.indices[keep], minlength=self.num_experts)

    def detach(self) -> Routing:
        """A copy with every tensor detached, safe to keep across steps."""

        def d(v):
            return v.detach() if isinstance(v, Tensor) else v

        return Routing(
            indices=self.indices.detach(),
            weights=self.weights.detach(),
            logits=self.logits.detach(),
            valid=d(self.valid),
            probs=d(self.probs),
            load_prob=d(self.load_prob),
            aux={k: v.detach() for k, v in self.aux.items()},
            stats={k: d(v) for k, v in self.stats.items()},
        )


class MoEOutput(NamedTuple):
    """A mixture's result: ``output`` (..., out_dim) and the `Routing` over its flattened T tokens.

    Unpacks like a pair: ``y, routing = moe(x)``; aux losses (``MoE.aux_loss(routing)``,
    ``zoo.moe.weighted_aux_loss``) and statistics (``zoo.moe.routing_summary``) are computed from ``routing``.
    """

    output: Tensor
    routing: Routing
