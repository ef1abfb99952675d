"""PPO networks of the SPHERE reference (sphere-rl/sphere, ``src/algorithms/moe/moe_ppo.py``): a dense Gaussian
actor, a top-k MoE Gaussian actor whose experts' last hidden features SPHERE regularises, and a dense critic.

All are ReLU MLPs of ``depth`` layers of ``width`` (reference 3 x 256) with flax's default init (LeCun-normal
kernels, truncated at two standard deviations; zero biases). The Gaussian policy has a state-independent
``log_std`` (A,) starting at 0 and no squashing (actions are clipped to [-1, 1] by the environment loop, SB3-style).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
from torch import Tensor, nn

from zoo.errors import ConfigError
from zoo.moe import Routing, combine_dense, dispatch_combine, make_router, segment_mm, sort_by_expert

ACTORS = ("dense", "moe")
DISPATCHES = ("sparse", "dense")
GATE = "SPHERE's per-state actor gate"
GATE_NEEDS = ("per_token_choice",)  # acting routes one state at a time: its experts must not depend on the batch
_TRUNC_STD = 0.87962566103423978  # std of a standard normal truncated to [-2, 2] (flax's variance_scaling)


def lecun_normal_(weight: Tensor, fan_in: int) -> Tensor:
    """flax ``lecun_normal``: truncated normal with variance 1 / fan_in, in place."""
    std = math.sqrt(1.0 / fan_in) / _TRUNC_STD
    return nn.init.trunc_normal_(weight, std=std, a=-2 * std, b=2 * std)


def mlp(in_dim: int, width: int, depth: int) -> nn.Sequential:
    """``depth`` x (Linear -> ReLU) from ``in_dim`` to ``width``: (B, in_dim) -> (B, width)."""
    layers: list[nn.Module] = []
    for i in range(depth):
        linear = nn.Linear(in_dim if i == 0 else width, width)
        lecun_normal_(linear.weight, linear.in_features)
        nn.init.zeros_(linear.bias)
        layers += [linear, nn.ReLU()]
    return nn.Sequential(*layers)


def _head(in_dim: int, out_dim: int) -> nn.Linear:
    head = nn.Linear(in_dim, out_dim)
    lecun_normal_(head.weight, in_dim)
    nn.init.zeros_(head.bias)
    return head


class ActorOutput(NamedTuple):
    """``mean`` (B, A) and ``log_std`` (A,) of the Gaussian policy; for the MoE actor also the gate's ``routing``
    over the B states, its dense ``weights`` (B, E) and every expert's last hidden ``features`` (B, E, H)."""

    mean: Tensor
    log_std: Tensor
    routing: Routing | None = None
    weights: Tensor | None = None
    features: Tensor | None = None


class DenseActor(nn.Module):
    """Dense PPO actor: ``mean = Linear(MLP(s))``; obs (B, obs_dim) -> ``ActorOutput`` (mean (B, A))."""

    def __init__(self, obs_dim: int, act_dim: int, width: int = 256, depth: int = 3):
        super().__init__()
        self.body = mlp(obs_dim, width, depth)
        self.head = _head(width, act_dim)
        self.log_std = nn.Parameter(torch.zeros(act_dim))

    def forward(self, obs: Tensor) -> ActorOutput:
        return ActorOutput(self.head(self.body(obs)), self.log_std)


class StackedMLPExperts(nn.Module):
    """E independent MLP experts (``depth`` x (Linear -> ReLU) of ``width``, then a linear head), parameters stacked
    on a leading expert axis.

    ``forward(x (T, in_dim))`` runs every expert on every state (the reference ``vmap``s its experts so) ->
    (outputs (T, E, out_dim), last hidden features (T, E, width)); ``forward_sorted(x (N, in_dim), counts)`` runs
    each expert on its segment of rows sorted by expert (``zoo.moe.segment_mm``) -> ((N, out_dim), (N, width)).
    """

    def __init__(self, num_experts: int, in_dim: int, width: int, depth: int, out_dim: int):
        super().__init__()
        dims = [in_dim] + [width] * depth
        self.weights = nn.ParameterList()
        self.biases = nn.ParameterList()
        for fan_in, fan_out in zip(dims[:-1], dims[1:]):
            self.weights.append(nn.Parameter(lecun_normal_(torch.empty(num_experts, fan_in, fan_out), fan_in)))
            self.biases.append(nn.Parameter(torch.zeros(num_experts, fan_out)))
        self.head_weight = nn.Parameter(lecun_normal_(torch.empty(num_experts, width, out_dim), width))
        self.head_bias = nn.Parameter(torch.zeros(num_experts, out_dim))
        self.num_experts = num_experts

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor]:
        h = torch.relu(torch.einsum("ti,eio->teo", x, self.weights[0]) + self.biases[0])
        for w, b in zip(self.weights[1:], self.biases[1:]):
            h = torch.relu(torch.einsum("tei,eio->teo", h, w) + b)
        return torch.einsum("tei,eio->teo", h, self.head_weight) + self.head_bias, h

    def forward_sorted(self, x: Tensor, counts: list[int]) -> tuple[Tensor, Tensor]:
        h = x
        for w, b in zip(self.weights, self.biases):
            h = torch.relu(segment_mm(h, w, counts, b))
        return segment_mm(h, self.head_weight, counts, self.head_bias), h


class _SortedOutputs:
    """An expert bank for ``zoo.moe.dispatch_combine`` whose outputs for the sorted slots were already computed
    (with their features, in one expert pass): ``dispatch_combine`` sorts the slots the same (stable) way."""

    def __init__(self, outputs: Tensor):
        self.outputs = outputs

    def forward_sorted(self, x: Tensor, counts: list[int]) -> Tensor:
        return self.outputs


class MoEActor(nn.Module):
    """SPHERE's top-k MoE PPO actor (reference ``TopKMoEActor``): E expert actors each output a pre-action mean
    and last hidden features; a gate (an MLP trunk over the state, then ``zoo.moe.make_router(router, width, E,
    top_k)``) weights them; ``mean = sum_e w_e(s) mean_e(s)`` via ``zoo.moe.combine_dense``. The reference's
    gate is top-k of the logits, softmax over those k at temperature 1: the ``topk`` router.

    ``dispatch="sparse"`` runs each expert only on the states routed to it (``zoo.moe.sort_by_expert`` +
    ``dispatch_combine``; unrouted experts' features are 0, as their weight is); ``"dense"`` runs every expert on
    every state as the reference does and mixes with ``combine_dense``. Both give the same mean, weighted
    features and gradients; sparse does k / E of the expert work.

    Shapes: obs (B, obs_dim) -> ``ActorOutput`` with mean (B, A), routing over B, weights (B, E),
    features (B, E, width).
    """

    def __init__(
        self,
        obs_dim: int,
        act_dim: int,
        width: int = 256,
        depth: int = 3,
        num_experts: int = 10,
        top_k: int = 2,
        router: str = "topk",
        router_kwargs: dict | None = None,
        dispatch: str = "sparse",
    ):
        super().__init__()
        check_moe_settings(num_experts, top_k)
        if dispatch not in DISPATCHES:
            raise ConfigError(f"model.init_args.dispatch: unknown {dispatch!r}; valid: {', '.join(DISPATCHES)}")
        self.dispatch = dispatch
        self.experts = StackedMLPExperts(num_experts, obs_dim, width, depth, act_dim)
        self.gate_body = mlp(obs_dim, width, depth)
        self.router = make_router(
            router, width, num_experts, top_k=top_k, mixture=GATE, needs=GATE_NEEDS, **(router_kwargs or {})
        )
        self.log_std = nn.Parameter(torch.zeros(act_dim))
        self.num_experts = num_experts

    def forward(self, obs: Tensor) -> ActorOutput:
        routing = self.router(self.gate_body(obs))
        weights = routing.dense_weights()
        if self.dispatch == "dense":
            means, features = self.experts(obs)
            return ActorOutput(combine_dense(means, routing), self.log_std, routing, weights, features)
        slot_ids, token_ids, counts = sort_by_expert(routing.indices, self.num_experts, routing.valid)
        means, feats = self.experts.forward_sorted(obs.index_select(0, token_ids), counts)
        mean = dispatch_combine(obs, routing, _SortedOutputs(means))
        t, k = routing.indices.shape
        per_slot = feats.new_zeros(t * k, feats.shape[1]).index_copy(0, slot_ids, feats).view(t, k, -1)
        index = routing.indices.clamp(min=0)[..., None].expand(-1, -1, feats.shape[1])
        features = feats.new_zeros(t, self.num_experts, feats.shape[1]).scatter_add(1, index, per_slot)
        return ActorOutput(mean, self.log_std, routing, weights, features)


class Critic(nn.Module):
    """Dense value network (the reference keeps the critic dense): obs (B, obs_dim) -> V (B,)."""

    def __init__(self, obs_dim: int, width: int = 256, depth: int = 3):
        super().__init__()
        self.body = mlp(obs_dim, width, depth)
        self.head = _head(width, 1)

    def forward(self, obs: Tensor) -> Tensor:
        return self.head(self.body(obs)).squeeze(-1)


def check_moe_settings(num_experts: int, top_k: int) -> None:
    if num_experts < 1:
        raise ConfigError(f"num_experts must be >= 1, got {num_experts}")
    if not 1 <= top_k <= num_experts:
        raise ConfigError(f"top_k must be in [1, num_experts={num_experts}], got {top_k}")


def make_actor(kind: str, obs_dim: int, act_dim: int, width: int, depth: int, **moe) -> nn.Module:
    """``kind`` in ``ACTORS``; ``moe`` (num_experts, top_k, router, router_kwargs) only for "moe"."""
    if kind == "dense":
        return DenseActor(obs_dim, act_dim, width, depth)
    if kind == "moe":
        return MoEActor(obs_dim, act_dim, width, depth, **moe)
    raise ConfigError(f"unknown actor {kind!r}; valid: {', '.join(ACTORS)}")
