"""Actors and critics for SAC (Haarnoja et al. 2018, arXiv 1801.01290): plain MLP, SimBa, and ScaleMoE with
output-level or feature-level gating.

Every actor maps normalised states (B, obs_dim) to a ``PolicyOutput(mean, log_std, routing)`` of a tanh-Gaussian
policy, mean and log_std (B, A); every critic maps (states (B, obs_dim), actions (B, A)) to a ``QOutput(q (B,),
routing)``. ``routing`` is the gate's `zoo.moe.Routing` for the MoE networks and None for the dense ones: routing
is a value the SAC update collects (aux losses, statistics), never state kept on the module.

ScaleMoE (ICML 2026) puts Mixture-of-Experts into SimBa's (Lee et al., ICLR 2025, arXiv 2410.09754) actor and
critic:
- output-level: a top-K gate over the state picks K expert actors / critics (each a full SimBa network with its
  own head); their means, log-stds and Q-values are mixed by the gate weights;
- feature-level: K of E SimBa encoders are picked by the gate, their final features are mixed by the gate
  weights and one shared head reads the mixture.
The gate is ``zoo.moe.make_router(router, obs_dim, E, top_k=K, **router_kwargs)`` on the (normalised) state for
actor and critic (ScaleMoE: ``router="topk"``); dispatch is ``zoo.moe.dispatch_combine`` (each expert runs only on
the states routed to it). A policy must be a function of its state alone (acting sees one state at a time), so
routers whose choice depends on the rest of the batch (expert choice) raise ConfigError.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
from torch import Tensor, nn

from zoo.errors import ConfigError
from zoo.moe import MoEOutput, Routing, dispatch_combine, make_router
from zoo_tasks.rl.simba import MLPEncoder, SimbaEncoder, StackedSimba, simba_encoder_params

ARCHITECTURES = ("mlp", "simba", "scalemoe-output", "scalemoe-feature")
LOG_STD_MIN, LOG_STD_MAX = -10.0, 2.0
GATINGS = ("output", "feature")


class PolicyOutput(NamedTuple):
    """An actor's result: ``mean`` (B, A), ``log_std`` (B, A) in [LOG_STD_MIN, LOG_STD_MAX], and the gate's
    ``routing`` over the B states (None for a dense actor)."""

    mean: Tensor
    log_std: Tensor
    routing: Routing | None = None


class QOutput(NamedTuple):
    """A critic's result: ``q`` (B,), and the gate's ``routing`` over the B states (None for a dense critic)."""

    q: Tensor
    routing: Routing | None = None


class EnsembleQOutput(NamedTuple):
    """A critic ensemble's result: ``q`` (num_q, B), and ``routings``: one per MoE critic, in order (empty when
    the critics are dense)."""

    q: Tensor
    routings: tuple[Routing, ...] = ()


def squash_log_std(raw: Tensor) -> Tensor:
    """Map an unbounded head output into [LOG_STD_MIN, LOG_STD_MAX] with tanh (as the SimBa reference policy)."""
    return LOG_STD_MIN + (LOG_STD_MAX - LOG_STD_MIN) * 0.5 * (1.0 + torch.tanh(raw))


def _linear_head(in_dim: int, out_dim: int) -> nn.Linear:
    head = nn.Linear(in_dim, out_dim)
    nn.init.orthogonal_(head.weight)
    nn.init.zeros_(head.bias)
    return head


def check_architecture(architecture: str) -> None:
    """Raise ConfigError naming the valid architectures."""
    if architecture not in ARCHITECTURES:
        raise ConfigError(f"unknown architecture {architecture!r}; valid: {', '.join(ARCHITECTURES)}")


class DenseActor(nn.Module):
    """Tanh-Gaussian policy on one encoder (SimBa or MLP): ``mean, log_std = split(Linear(encoder(s)))``.

    Shapes: obs (B, obs_dim) -> ``PolicyOutput`` with mean (B, A), log_std (B, A) in [-10, 2], routing None.
    """

    def __init__(self, encoder: nn.Module, act_dim: int):
        super().__init__()
        self.encoder, self.act_dim = encoder, act_dim
        self.head = _linear_head(encoder.out_dim, 2 * act_dim)

    def forward(self, obs: Tensor) -> PolicyOutput:
        mean, raw = self.head(self.encoder(obs)).split(self.act_dim, dim=-1)
        return PolicyOutput(mean, squash_log_std(raw))


class DenseCritic(nn.Module):
    """Q-network on one encoder over ``concat(state, action)``: ``Q = Linear(encoder([s, a]))``.

    Shapes: obs (B, obs_dim), action (B, A) -> ``QOutput`` with q (B,), routing None.
    """

    def __init__(self, encoder: nn.Module):
        super().__init__()
        self.encoder = encoder
        self.head = _linear_head(encoder.out_dim, 1)

    def forward(self, obs: Tensor, action: Tensor) -> QOutput:
        return QOutput(self.head(self.encoder(torch.cat([obs, action], dim=-1))).squeeze(-1))


class _PolicyExperts(nn.Module):
    """Output-level actor experts: each expert's head gives (mean, raw log-std); the log-std is squashed per
    expert, so the gate mixes log-stds (not pre-activations). (N, obs_dim) sorted by expert -> (N, 2A)."""

    def __init__(self, nets: StackedSimba, act_dim: int):
        super().__init__()
        self.nets, self.act_dim, self.num_experts = nets, act_dim, nets.num_experts

    def forward_sorted(self, x: Tensor, counts: list[int]) -> Tensor:
        mean, raw = self.nets.forward_sorted(x, counts).split(self.act_dim, dim=-1)
        return torch.cat([mean, squash_log_std(raw)], dim=-1)


def check_moe_settings(num_experts: int, top_k: int, gating: str | None = None) -> None:
    """Raise ConfigError naming the key when the gate's settings cannot build a ScaleMoE network."""
    if gating is not None and gating not in GATINGS:
        raise ConfigError(f"unknown gating {gating!r}; valid: {', '.join(GATINGS)}")
    if num_experts < 1:
        raise ConfigError(f"num_experts must be >= 1, got {num_experts}")
    if not 1 <= top_k <= num_experts:
        raise ConfigError(f"top_k must be in [1, num_experts={num_experts}], got {top_k}")


GATE = "ScaleMoE's per-state gate"  # how a ConfigError names the mixture a router cannot route
GATE_NEEDS = ("per_token_choice",)  # a state's experts must not depend on the other states of the batch


class _GatedSimba(nn.Module):
    """What the ScaleMoE actor and critic share: the gate over the state and the routed expert call.
    Subclasses set ``self.experts`` (a ``StackedSimba`` or wrapper) and ``self.head`` (None at output level)."""

    def __init__(
        self,
        obs_dim: int,
        hidden: int,
        num_experts: int,
        top_k: int,
        gating: str,
        router: str,
        router_kwargs: dict | None,
    ):
        super().__init__()
        check_moe_settings(num_experts, top_k, gating)
        self.gating, self.num_experts, self.expert_hidden = gating, num_experts, hidden
        self.router = make_router(
            router, obs_dim, num_experts, top_k=top_k, mixture=GATE, needs=GATE_NEEDS, **(router_kwargs or {})
        )

    def _routed(self, obs: Tensor, expert_input: Tensor) -> MoEOutput:
        """Gate on ``obs``; run each row of ``expert_input`` through its experts; mix by the gate weights."""
        routing = self.router(obs)
        return MoEOutput(dispatch_combine(expert_input, routing, self.experts), routing)


class MoEActor(_GatedSimba):
    """ScaleMoE actor: a gate over the state picks K of E SimBa experts (output- or feature-level fusion).

    ``gating="output"``: expert e outputs (mean_e, log_std_e); the policy is ``sum_k w_k (mean_k, log_std_k)``.
    ``gating="feature"``: expert e outputs SimBa features f_e (B, h); ``(mean, log_std) = head(sum_k w_k f_k)``.
    Shapes: obs (B, obs_dim) -> ``PolicyOutput`` with mean (B, A), log_std (B, A) and the gate's routing over B.
    Gate: ``make_router(router, obs_dim, E, top_k=K, **router_kwargs)`` (ScaleMoE: ``"topk"``).
    """

    def __init__(
        self,
        obs_dim: int,
        act_dim: int,
        hidden: int,
        num_blocks: int,
        num_experts: int,
        top_k: int,
        gating: str,
        router: str = "topk",
        router_kwargs: dict | None = None,
    ):
        super().__init__(obs_dim, hidden, num_experts, top_k, gating, router, router_kwargs)
        self.act_dim = act_dim
        if gating == "output":
            self.experts = _PolicyExperts(StackedSimba(num_experts, obs_dim, hidden, num_blocks, 2 * act_dim), act_dim)
            self.head = None
        else:
            self.experts = StackedSimba(num_experts, obs_dim, hidden, num_blocks)
            self.head = _linear_head(hidden, 2 * act_dim)

    def forward(self, obs: Tensor) -> PolicyOutput:
        y, routing = self._routed(obs, obs)
        if self.head is None:
            return PolicyOutput(*y.split(self.act_dim, dim=-1), routing)
        mean, raw = self.head(y).split(self.act_dim, dim=-1)
        return PolicyOutput(mean, squash_log_std(raw), routing)


class MoECritic(_GatedSimba):
    """ScaleMoE critic: a gate over the state picks K of E SimBa Q-experts reading ``[s, a]``.

    ``gating="output"``: ``Q = sum_k w_k Q_k(s, a)``; ``gating="feature"``: ``Q = Linear(sum_k w_k f_k(s, a))``.
    Shapes: obs (B, obs_dim), action (B, A) -> ``QOutput`` with q (B,) and the gate's routing over B.
    """

    def __init__(
        self,
        obs_dim: int,
        act_dim: int,
        hidden: int,
        num_blocks: int,
        num_experts: int,
        top_k: int,
        gating: str,
        router: str = "topk",
        router_kwargs: dict | None = None,
    ):
        super().__init__(obs_dim, hidden, num_experts, top_k, gating, router, router_kwargs)
        out_dim = 1 if gating == "output" else None
        self.experts = StackedSimba(num_experts, obs_dim + act_dim, hidden, num_blocks, out_dim)
        self.head = _linear_head(hidden, 1) if gating == "feature" else None

    def forward(self, obs: Tensor, action: Tensor) -> QOutput:
        y, routing = self._routed(obs, torch.cat([obs, action], dim=-1))
        return QOutput((y if self.head is None else self.head(y)).squeeze(-1), routing)


class CriticEnsemble(nn.Module):
    """``num_q`` independent critics stacked: (B, obs_dim), (B, A) -> ``EnsembleQOutput`` with q (num_q, B) and
    the MoE critics' routings. With 2, SAC's clipped double-Q (Fujimoto et al. 2018) takes the minimum; the SimBa
    reference uses 1 on the DeepMind Control Suite."""

    def __init__(self, critics: list[nn.Module]):
        super().__init__()
        self.critics = nn.ModuleList(critics)

    def forward(self, obs: Tensor, action: Tensor) -> EnsembleQOutput:
        outs = [c(obs, action) for c in self.critics]
        routings = tuple(o.routing for o in outs if o.routing is not None)
        return EnsembleQOutput(torch.stack([o.q for o in outs]), routings)


def moe_active_params(
    in_dim: int, out_dim: int, width: int, num_blocks: int, top_k: int, gating: str, gate_dim: int, num_experts: int
) -> int:
    """Parameters one state activates in a ScaleMoE network: K experts (+ their heads at output level, or one
    shared head at feature level) + the gate."""
    head = width * out_dim + out_dim
    expert = simba_encoder_params(in_dim, width, num_blocks) + (head if gating == "output" else 0)
    return top_k * expert + (head if gating == "feature" else 0) + gate_dim * num_experts


def matched_expert_width(
    in_dim: int, out_dim: int, hidden: int, num_blocks: int, top_k: int, gating: str, gate_dim: int, num_experts: int
) -> int:
    """Expert width whose active parameters are closest to a dense SimBa of width ``hidden`` (the dense twin)."""
    dense = simba_encoder_params(in_dim, hidden, num_blocks) + hidden * out_dim + out_dim
    guess = max(1, int(hidden / math.sqrt(top_k)))
    candidates = range(max(1, guess // 2), 2 * guess + 2)
    return min(
        candidates,
        key=lambda w: abs(
            moe_active_params(in_dim, out_dim, w, num_blocks, top_k, gating, gate_dim, num_experts) - dense
        ),
    )


def make_actor(
    architecture: str,
    obs_dim: int,
    act_dim: int,
    hidden: int,
    num_blocks: int,
    num_experts: int = 8,
    top_k: int = 2,
    expert_hidden: int | None = None,
    router: str = "topk",
    router_kwargs: dict | None = None,
) -> nn.Module:
    """Build the actor for ``architecture`` in ``ARCHITECTURES``. MoE experts get width ``expert_hidden``, or,
    when None, the width that matches the dense SimBa actor's active parameters; the gate is ``router``."""
    check_architecture(architecture)
    if architecture == "mlp":
        return DenseActor(MLPEncoder(obs_dim, hidden), act_dim)
    if architecture == "simba":
        return DenseActor(SimbaEncoder(obs_dim, hidden, num_blocks), act_dim)
    gating = architecture.removeprefix("scalemoe-")
    width = expert_hidden or matched_expert_width(
        obs_dim, 2 * act_dim, hidden, num_blocks, top_k, gating, obs_dim, num_experts
    )
    return MoEActor(obs_dim, act_dim, width, num_blocks, num_experts, top_k, gating, router, router_kwargs)


def make_critic(
    architecture: str,
    obs_dim: int,
    act_dim: int,
    hidden: int,
    num_blocks: int,
    num_q: int = 1,
    num_experts: int = 8,
    top_k: int = 2,
    expert_hidden: int | None = None,
    router: str = "topk",
    router_kwargs: dict | None = None,
) -> CriticEnsemble:
    """Build ``num_q`` critics for ``architecture`` (see ``make_actor`` for the MoE width rule)."""
    check_architecture(architecture)
    in_dim = obs_dim + act_dim

    def one() -> nn.Module:
        if architecture == "mlp":
            return DenseCritic(MLPEncoder(in_dim, hidden))
        if architecture == "simba":
            return DenseCritic(SimbaEncoder(in_dim, hidden, num_blocks))
        gating = architecture.removeprefix("scalemoe-")
        width = expert_hidden or matched_expert_width(
            in_dim, 1, hidden, num_blocks, top_k, gating, obs_dim, num_experts
        )
        return MoECritic(obs_dim, act_dim, width, num_blocks, num_experts, top_k, gating, router, router_kwargs)

    return CriticEnsemble([one() for _ in range(num_q)])
