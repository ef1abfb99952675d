"""`MoE`: router -> (capacity) -> sparse dispatch -> experts -> weighted combine [+ shared experts]."""

from __future__ import annotations

from typing import Any

from torch import Tensor, nn

from zoo.moe.dispatch import apply_capacity, dispatch_combine
from zoo.moe.errors import ConfigError
from zoo.moe.experts import EXPERTS, ModuleListExperts, make_experts
from zoo.moe.local_init import expert_share
from zoo.moe.losses import erc_loss
from zoo.moe.routers import broadcast_condition, make_router
from zoo.moe.routing import MoEOutput, Routing
from zoo.moe.weighting import check_aux_weights, weighted_aux_loss


class MoE(nn.Module):
    """Sparse Mixture-of-Experts layer (Shazeer et al. 2017; GShard; Switch) with swappable parts.

    ``y = sum_{j} w_j(x) * expert_{i_j(x)}(x) [+ shared(x)]`` where the router picks experts ``i_j`` and
    weights ``w_j`` per token. Only the selected experts run on a token (sort-by-expert dispatch).

    Args (all plain types, so LightningCLI/jsonargparse can build it from YAML):
        dim, hidden, num_experts, top_k: sizes; each routed expert maps dim -> hidden -> out_dim.
        router: name in ``zoo.moe.ROUTERS`` ("topk", "noisy_topk", "sigmoid_bias", "expert_choice",
            "dtop_p", "soft", "dirichlet", "kern", "grouped", or one an installed plugin declares in the
            ``zoo.routers`` entry-point group); ``router_kwargs`` go to its class.
        experts: "ffn" (GELU), "swiglu", "lowrank" (rank ``rank``), "linear" - or, programmatically, an
            ``nn.ModuleList`` of arbitrary (n, dim) -> (n, out_dim) modules (heterogeneous experts).
        out_dim: output width (default dim). num_shared: always-on shared experts (DeepSeekMoE), stored
            as one expert of width ``num_shared * hidden``, which equals the sum of num_shared experts.
        capacity_factor: None = no dropping; else each expert keeps at most
            ``ceil(cf * tokens * k / E)`` slots (Switch priority), the rest become index -1.
        condition_dim: width of an optional condition vector joined to the router input.
        aux_weights: name -> weight for ``aux_loss(routing)``; names in ``zoo.moe.AUX_NAMES``: "load_balance",
            "z", "cv_squared", "entropy", "erc", and router-specific ones ("sparsity", "dirichlet_kl").

    Shapes: ``forward(x (..., dim), condition=(..., c) | (B, c) | (c,), valid=(...) bool) -> MoEOutput``:
    ``output`` (..., out_dim) and ``routing``, the `Routing` over the flattened T = prod(...) tokens::

        y, routing = moe(x)
        loss = task_loss + moe.aux_loss(routing)

    Inside ``zoo.moe.local_expert_init`` a named bank holds only this process's share of the E experts (the layer
    then runs once ``to_expert_parallel`` made it an `ExpertParallelMoE`).

    No statistics are computed in forward (``zoo.moe.routing_summary(routing)`` does that on demand).

    State-dict layout (E experts, d = dim, h = hidden, o = out_dim, c = condition_dim):
        router.gate.weight (E, d + c)      [grouped: (E_dynamic, d + c)]
        router.noise.weight (E, d + c)     noisy_topk only
        router.expert_bias (E,)            sigmoid_bias only (buffer)
        router.log_temp (), router.threshold (), router.integral ()      dtop_p only
        router.concentration.weight (E, d + c)                          dirichlet only
        experts.w1 (E, d, h), experts.b1 (E, h), experts.w2 (E, h, o), experts.b2 (E, o)     ffn
        experts.w1 (E, d, 2h) = [gate | up], experts.w2 (E, h, o)                           swiglu
        experts.u (E, d, r), experts.v (E, r, o), experts.b (E, o)                          lowrank
        experts.weight (E, d, o), experts.bias (E, o)                                       linear
        experts.experts.<e>.*                                                               ModuleList
        shared.* : as experts.* with E = 1 and hidden = num_shared * h (only when num_shared > 0)
    """

    def __init__(
        self,
        dim: int,
        hidden: int,
        num_experts: int,
        top_k: int = 2,
        router: str = "topk",
        experts: str | nn.ModuleList = "ffn",
        out_dim: int | None = None,
        num_shared: int = 0,
        capacity_factor: float | None = None,
        condition_dim: int = 0,
        aux_weights: dict[str, float] | None = None,
        rank: int | None = None,
        router_kwargs: dict[str, Any] | None = None,
    ):
        super().__init__()
        self.dim, self.hidden, self.top_k = dim, hidden, top_k
        self.out_dim = out_dim or dim
        self.capacity_factor = capacity_factor
        if isinstance(experts, (nn.ModuleList, list)):
            self.experts = ModuleListExperts(experts)
            num_experts = self.experts.num_experts
            self.expert_type = "modulelist"
        else:
            if experts not in EXPERTS:
                raise ConfigError(f"unknown experts {experts!r}; valid: {', '.join(sorted(EXPERTS))}")
            held = expert_share(num_experts)  # inside zoo.moe.local_expert_init: this process's share only
            self.experts = make_experts(experts, num_experts, dim, hidden, self.out_dim, rank, held)
            self.expert_type = experts
        self.num_experts = num_experts
        self.router = make_router(
            router, dim, num_experts, top_k=top_k, condition_dim=condition_dim, **(router_kwargs or {})
        )
        self.shared = None
        if num_shared:
            if self.expert_type == "modulelist":
                raise ConfigError("num_shared needs a named expert type, not a ModuleList")
            self.shared = make_experts(
                self.expert_type,
                1,
                dim,
                hidden * num_shared,
                self.out_dim,
                None if rank is None else rank * num_shared,
            )
        self.aux_weights = check_aux_weights(aux_weights)

    def flat_inputs(
        self, x: Tensor, condition: Tensor | None, valid: Tensor | None
    ) -> tuple[tuple[int, ...], Tensor, Tensor | None, Tensor | None]:
        """``x`` (..., dim) as token rows (N, dim), with its leading shape, condition and valid mask per row."""
        lead = x.shape[:-1]
        valid2 = None if valid is None else valid.reshape(-1).bool()
        if condition is not None:
            condition = broadcast_condition(condition, lead)
        return lead, x.reshape(-1, self.dim), condition, valid2

    def forward(self, x: Tensor, condition: Tensor | None = None, valid: Tensor | None = None) -> MoEOutput:
        lead, x2, condition, valid2 = self.flat_inputs(x, condition, valid)
        routing = self.router(x2, condition=condition, valid=valid2)
        if self.capacity_factor is not None:
            routing = apply_capacity(routing, self.capacity_factor)
        y = dispatch_combine(x2, routing, self.experts, self.out_dim)
        if self.shared is not None:
            y = y + self.shared.forward_sorted(x2, [x2.shape[0]])
        return MoEOutput(y.reshape(*lead, y.shape[-1]), routing)

    def erc_loss(self, noise_std: float = 0.1, alpha: float = 1.0) -> Tensor:
        """ERC loss of this layer's router rows against its experts (see ``zoo.moe.losses.erc_loss``)."""
        w = self.router.gate.weight
        if w.shape[0] != self.num_experts:
            raise ConfigError(
                f"erc loss needs one router row per expert; {type(self.router).__name__} has "
                f"{w.shape[0]} rows for {self.num_experts} experts"
            )
        return erc_loss(w[:, : self.dim], self.experts, noise_std, alpha)

    def aux_loss(self, routing: Routing) -> Tensor:
        """This layer's ``aux_weights`` applied to ``routing`` (from its forward), via ``zoo.moe.weighted_aux_loss``.

        "erc" is computed here (it needs this layer's router rows and experts, and draws the proxy noise from the
        global RNG); every other name comes from the routing.
        """
        erc = self.erc_loss() if self.aux_weights.get("erc") else None
        return weighted_aux_loss(routing, self.aux_weights, erc=erc)

    def extra_repr(self) -> str:
        return (
            f"dim={self.dim}, hidden={self.hidden}, num_experts={self.num_experts}, top_k={self.top_k}, "
            f"experts={self.expert_type!r}, capacity_factor={self.capacity_factor}"
        )
