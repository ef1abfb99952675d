"""C²GMoE: Graph MoE with group-wise Contrastive routing and Confidence-aware fusion.

"Discriminative Mixture-of-Experts on Graphs with Reliable Expert Fusion" (ICML 2026; abstract only: no arXiv
version, no equations and no code are public, so the loss and fusion forms below are this implementation's own
reading, written out as equations on each function). The paper diagnoses three failures of graph MoEs --
homogenised experts, a router that collapses onto few experts, and uncertain routing that correlates with
errors -- and fixes them with

1. **group-wise contrastive routing** (:func:`group_contrastive_routing_loss`): items are grouped into semantic
   clusters (k-means, :func:`zoo.utils.kmeans.kmeans`, on the router's structure-aware hidden features); each
   item's routing distribution is pulled toward its cluster's mean routing and pushed away from the other
   clusters', while a load-balancing term (importance + load cv², Shazeer et al. 2017, arXiv:1701.06538,
   Eqs. 6-10, as in GMoE) keeps every expert in use;
2. **confidence-aware fusion** (:func:`confidence_fusion`): the combine weight of expert e on item i is the
   router weight times that expert's confidence on i (1 - normalised predictive entropy, or top-2 margin),
   renormalised over the selected experts, so an unsure expert contributes less even when routed to.
"""

from __future__ import annotations

import math
from dataclasses import replace

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch_geometric.nn import GCNConv

from zoo.errors import ConfigError
from zoo.moe import Routing, combine_dense, make_router, mixture_weights, weighted_aux_loss
from zoo.utils.kmeans import kmeans
from zoo_tasks.graphs.baselines import GRAPH_LEVEL_NEEDS, LEVELS, POOLS
from zoo_tasks.graphs.checks import check_choice
from zoo_tasks.graphs.experts import GNNExpert, graph_head, input_dropout, readout
from zoo_tasks.graphs.output import GraphModelOutput, unweighted_aux

CONFIDENCES = ("entropy", "margin", "none")


def group_contrastive_routing_loss(probs: Tensor, clusters: Tensor, temperature: float = 0.2) -> Tensor:
    """Group-wise contrastive routing loss: items of a cluster route alike, clusters route apart.

    With ``z_i = probs_i / ||probs_i||`` and cluster prototypes ``mu_c = normalise(mean_{i in c} z_i)``::

        L = mean_i  -log( exp(z_i . mu_{c(i)} / tau) / sum_c exp(z_i . mu_c / tau) )

    an InfoNCE over clusters: the positive is the item's own cluster routing, the negatives every other
    cluster's. Gradients flow through the prototypes too, so whole clusters are pushed apart.

    Args:
        probs: (T, E) routing probabilities (rows sum to 1).
        clusters: (T,) integer cluster id per item (any labels; only equality matters).
        temperature: tau > 0.

    Returns:
        scalar loss; exactly 0 (with a graph) when fewer than two clusters are present.
    """
    if probs.dim() != 2 or clusters.shape != probs.shape[:1]:
        raise ValueError(
            f"probs must be (T, E) and clusters (T,), got {tuple(probs.shape)} and {tuple(clusters.shape)}"
        )
    if temperature <= 0:
        raise ConfigError(f"temperature={temperature} is not valid; it must be > 0")
    ids, inverse = torch.unique(clusters, return_inverse=True)
    if ids.numel() < 2:
        return probs.sum() * 0.0
    z = F.normalize(probs.float(), dim=-1)
    proto = torch.zeros(ids.numel(), z.shape[1], device=z.device).index_add(0, inverse, z)
    proto = F.normalize(proto, dim=-1)
    return F.cross_entropy(z @ proto.t() / temperature, inverse)


def expert_confidence(log_probs: Tensor, kind: str = "entropy") -> Tensor:
    """Per-expert, per-item confidence in [0, 1] from the expert's own prediction.

    Args:
        log_probs: (E, T, C) log class probabilities of each expert.
        kind: ``"entropy"``: ``c = 1 - H(p) / log C``; ``"margin"``: ``c = p_(1) - p_(2)``.

    Returns:
        (T, E) confidences.
    """
    check_choice("confidence", kind, CONFIDENCES[:2])
    probs = log_probs.exp()
    if kind == "entropy":
        ent = -(probs * log_probs).sum(-1)
        conf = 1.0 - ent / math.log(max(log_probs.shape[-1], 2))
    else:
        top2 = probs.topk(min(2, probs.shape[-1]), dim=-1).values
        conf = top2[..., 0] - (top2[..., 1] if top2.shape[-1] > 1 else 0.0)
    return conf.clamp(0.0, 1.0).t()


def confidence_fusion(
    expert_log_probs: Tensor, routing: Routing, confidence: Tensor | None, eps: float = 1e-6
) -> tuple[Tensor, Tensor]:
    """Fuse expert predictions: ``p(i) = sum_e w_ie p_e(i)``, ``w_ie = g_ie (c_ie + eps) / sum_f g_if (c_if + eps)``.

    ``g`` are the routing's dense combine weights (0 for experts not selected) and ``c`` the confidences, the
    ``expert_scale`` hook of ``zoo.moe.combine_dense`` (renormalised over experts). Without confidence (the
    ablation) the router weights alone are renormalised.

    Args:
        expert_log_probs: (E, T, C) expert log class probabilities.
        routing: the router's `Routing` over the T items and E experts.
        confidence: (T, E) expert confidences in [0, 1], or None for router-only fusion.
        eps: keeps the weights defined when every selected expert has confidence 0 (then the router decides).

    Returns:
        log_probs (T, C) of the mixture, and the weights w (T, E) (rows sum to 1).
    """
    scale = None if confidence is None else confidence + eps
    mixture = combine_dense(expert_log_probs.exp().transpose(0, 1), routing, expert_scale=scale, renormalize=True)
    return mixture.clamp_min(1e-12).log(), mixture_weights(routing, scale, renormalize=True)


class C2GMoE(nn.Module):
    """C²GMoE (ICML 2026): prediction-level mixture of heterogeneous GNN experts, contrastive routing,
    confidence-aware fusion.

    Each expert is a full GNN (:class:`~zoo_tasks.graphs.experts.GNNExpert`, kinds such as hop-1 / hop-2 GCN, GAT,
    SAGE, GIN) that predicts the classes on its own. A structure-aware router (one ``GCNConv`` + ReLU, then a
    ``zoo.moe`` router) scores the experts per item; for graph classification the router features and every
    expert's node embeddings are mean/sum pooled per graph and each expert has its own MLP head.

    Shapes: x (N, in_dim), edge_index (2, m), edge_index_2hop (2, m2) when a hop-2 expert is used, batch (N,)
    graph ids for ``level="graph"``. Output :class:`~zoo_tasks.graphs.output.GraphModelOutput` with log_probs
    (T, C), T = N (node level) or B graphs, routings ``{"router": Routing over T}``, expert_outputs (T, E, C)
    expert logits, expert_log_probs (E, T, C).

    Args:
        expert_kinds: one expert per entry, e.g. ``["gcn", "gcn2", "gat", "sage"]``.
        router, router_kwargs: ``zoo.moe`` router name and its extra arguments; ``top_k`` experts per item.
            Default softmax ``"topk"``: noisy top-k starts its gate at zero (Shazeer et al.), where every item
            routes uniformly and the contrastive loss sits at a symmetric saddle with zero gradient.
        confidence: ``"entropy"``, ``"margin"`` or ``"none"`` (router-only fusion: the no-confidence ablation).
        contrastive_weight: weight of :func:`group_contrastive_routing_loss` (0: the no-contrastive ablation).
        balance_weight: weight of the importance + load cv² loss (``zoo.moe`` "cv_squared", as in GMoE).
        num_clusters, temperature, kmeans_iters: the semantic clusters (0: one per expert) and the contrastive
            temperature.
        router_norm: LayerNorm the router features before the gate. Row-normalised bag-of-words inputs (Cora)
            give router features of size ~1e-2, so without it the router logits stay ~0, routing stays uniform
            and the contrastive loss sits at its zero-gradient saddle.
    """

    def __init__(
        self,
        in_dim: int,
        num_classes: int,
        expert_kinds: list[str],
        hidden: int = 64,
        num_layers: int = 2,
        dropout: float = 0.5,
        heads: int = 8,
        level: str = "node",
        pool: str = "mean",
        router: str = "topk",
        top_k: int = 2,
        router_hidden: int = 64,
        confidence: str = "entropy",
        contrastive_weight: float = 0.1,
        balance_weight: float = 0.01,
        num_clusters: int = 0,
        temperature: float = 0.2,
        kmeans_iters: int = 5,
        router_norm: bool = False,
        router_kwargs: dict | None = None,
    ) -> None:
        super().__init__()
        check_choice("level", level, LEVELS)
        check_choice("pool", pool, POOLS)
        check_choice("confidence", confidence, CONFIDENCES)
        if not expert_kinds:
            raise ConfigError("expert_kinds is empty; C²GMoE needs at least one expert kind")
        if temperature <= 0:
            raise ConfigError(f"temperature={temperature} is not valid; it must be > 0")
        if num_clusters < 0:
            raise ConfigError(f"num_clusters={num_clusters} is not valid; use 0 (one per expert) or more")
        self.level, self.pool, self.dropout = level, pool, dropout
        self.confidence = confidence
        self.contrastive_weight = contrastive_weight
        self.aux_weights = {"cv_squared": balance_weight}
        self.num_experts = len(expert_kinds)
        self.num_clusters = num_clusters or self.num_experts
        self.temperature, self.kmeans_iters = temperature, kmeans_iters
        expert_out = num_classes if level == "node" else hidden
        self.experts = nn.ModuleList(
            GNNExpert(kind, in_dim, hidden, expert_out, num_layers=num_layers, dropout=dropout, heads=heads)
            for kind in expert_kinds
        )
        self.heads = None
        if level == "graph":
            self.heads = nn.ModuleList(graph_head(hidden, num_classes, dropout) for _ in expert_kinds)
        self.router_conv = GCNConv(in_dim, router_hidden)
        self.router_norm = nn.LayerNorm(router_hidden) if router_norm else nn.Identity()
        self.router = make_router(
            router,
            router_hidden,
            self.num_experts,
            top_k=min(top_k, self.num_experts),
            mixture="C²GMoE's per-graph gate",
            needs=GRAPH_LEVEL_NEEDS if level == "graph" else (),
            **(router_kwargs or {}),
        )
        # k-means centroids of the previous training step (warm start keeps clusters stable); not in checkpoints
        self.register_buffer("centroids", torch.empty(0), persistent=False)

    def forward(
        self, x: Tensor, edge_index: Tensor, edge_index_2hop: Tensor | None = None, batch: Tensor | None = None
    ) -> GraphModelOutput:
        if self.level == "graph" and batch is None:
            batch = x.new_zeros(x.shape[0], dtype=torch.long)
        h_route = F.relu(self.router_conv(input_dropout(x, self.dropout, self.training), edge_index))
        if self.level == "graph":
            h_route = readout(h_route, batch, "mean")
        h_route = self.router_norm(h_route)
        routing = self.router(h_route)

        outs = []
        for e, expert in enumerate(self.experts):
            out = expert(x, edge_index, edge_index_2hop)
            if self.heads is not None:
                out = self.heads[e](readout(F.relu(out), batch, self.pool))
            outs.append(out)
        expert_logits = torch.stack(outs)  # (E, T, C)
        expert_log_probs = F.log_softmax(expert_logits, dim=-1)
        conf = None if self.confidence == "none" else expert_confidence(expert_log_probs.detach(), self.confidence)
        log_probs, weights = confidence_fusion(expert_log_probs, routing, conf)

        aux = {"balance": unweighted_aux(routing, "cv_squared")}
        aux_weights = self.aux_weights
        if self.training and self.contrastive_weight > 0:
            clusters = self.cluster(h_route.detach())
            aux["contrastive"] = group_contrastive_routing_loss(routing.router_probs(), clusters, self.temperature)
            routing = replace(routing, aux={**routing.aux, "contrastive": aux["contrastive"]})
            aux_weights = {**aux_weights, "contrastive": self.contrastive_weight}
        aux_loss = weighted_aux_loss(routing, aux_weights)
        return GraphModelOutput(
            log_probs,
            aux_loss,
            aux,
            routings={"router": routing},
            expert_outputs=expert_logits.transpose(0, 1),
            expert_log_probs=expert_log_probs,
            fusion_weights=weights,
        )

    @torch.no_grad()
    def cluster(self, features: Tensor) -> Tensor:
        """(T, d) router features -> (T,) semantic cluster ids; centroids are warm-started across steps."""
        init = self.centroids if self.centroids.numel() else None
        labels, centroids = kmeans(features, self.num_clusters, self.kmeans_iters, init=init)
        self.centroids = centroids
        return labels
