"""DroneDINO's heterogeneous routed MoE feed-forward block and the task-recognition loss (pure torch + zoo.moe).

DroneDINO (ICML 2026) replaces the FFN of DINO's encoder and decoder layers by three kinds of experts:

    y = x + drop( shared(x) + task_expert[t](x) + sum_{j in topk(router(x))} w_j(x) * dynamic_j(x) )

- a **shared** expert active for every token;
- **task-specific** experts: expert ``t`` runs only on tokens of task ``t`` (``rgb``, ``ir``, ``rgbir``);
- **dynamic** experts chosen per token by a router from ``zoo.moe`` (``router`` / ``router_kwargs`` / ``top_k``),
  through ``zoo.moe.MoE`` (sort-by-expert dispatch);
- the **task-recognition** loss: a linear head predicts the image's task from the block's mean-pooled mixture
  output; its cross-entropy (``routing.aux["task_recognition"]``, weighted like every aux loss through
  ``zoo.moe.weighted_aux_loss``) penalises features with low task-discriminability.

``shared=False, task_specific=False`` gives the "unified top-k MoE" baseline (dynamic experts only).

Shapes: ``forward(x (B, N, d), identity=None) -> (B, N, d)``, the signature of mmcv's ``FFN``, so the block
drops into mmdet's transformer layers. The per-image task ids ``(B,)`` come from the shared `MoEContext` the
detector fills before its forward (mmdet's layers pass only the query tensor); each block writes its `Routing`
into that context under its ``name`` for the step's ``{"routing": ...}``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from zoo.moe import FFNExperts, MoE, Routing

TASK_RECOGNITION = "task_recognition"


@dataclass
class MoEContext:
    """Per-forward state shared by a detector and its MoE blocks: the images' task ids in, routings out."""

    task_ids: Tensor | None = None
    routings: dict[str, Routing] = field(default_factory=dict)


class HeteroMoEFFN(nn.Module):
    """Shared + task-specific + dynamic top-k experts with a task-recognition head (see the module docstring).

    Args:
        embed_dims: token width d. feedforward_channels: hidden width h of every expert.
        num_tasks: task-specific experts (one per task) and task-head classes.
        num_dynamic, top_k, router, router_kwargs: the routed part (``zoo.moe.MoE``).
        shared, task_specific: include those experts.
        task_recognition: compute the task-recognition loss into ``routing.aux``.
        ffn_drop: dropout on the block's output (mmcv FFN's ``ffn_drop``).

    State dict: ``shared.*`` (FFNExperts with E=1), ``task_experts.*`` (E=num_tasks), ``dynamic.router.*`` /
    ``dynamic.experts.*`` (zoo.moe.MoE), ``task_head.{weight,bias}`` (num_tasks, d).
    """

    def __init__(
        self,
        embed_dims: int = 256,
        feedforward_channels: int = 1024,
        num_tasks: int = 3,
        num_dynamic: int = 4,
        top_k: int = 2,
        router: str = "topk",
        router_kwargs: dict[str, Any] | None = None,
        shared: bool = True,
        task_specific: bool = True,
        task_recognition: bool = True,
        ffn_drop: float = 0.0,
        name: str = "moe",
        **_mmcv_ffn_args,  # num_fcs, act_cfg, add_identity of mmcv's FFN config: fixed here (2 fcs, GELU, residual)
    ):
        super().__init__()
        self.embed_dims, self.num_tasks, self.name = embed_dims, num_tasks, name
        self.shared = FFNExperts(1, embed_dims, feedforward_channels) if shared else None
        self.task_experts = FFNExperts(num_tasks, embed_dims, feedforward_channels) if task_specific else None
        self.dynamic = MoE(
            embed_dims,
            feedforward_channels,
            num_dynamic,
            top_k=top_k,
            router=router,
            router_kwargs=router_kwargs,
        )
        self.task_head = nn.Linear(embed_dims, num_tasks) if task_recognition else None
        self.drop = nn.Dropout(ffn_drop)
        self.context: MoEContext | None = None

    def _task_ids(self, batch: int, device: torch.device) -> Tensor:
        ids = None if self.context is None else self.context.task_ids
        if ids is None:
            if self.task_experts is not None or self.task_head is not None:
                raise RuntimeError(f"{self.name}: task-specific experts need the images' task ids (MoEContext)")
            return torch.zeros(batch, dtype=torch.long, device=device)
        return ids.to(device)

    def mixture(self, x: Tensor) -> tuple[Tensor, Routing]:
        """The expert sum without the residual: x (B, N, d) -> (B, N, d), and the dynamic experts' routing."""
        b, n, d = x.shape
        tokens = x.reshape(-1, d)
        y, routing = self.dynamic(tokens)
        if self.shared is not None:
            y = y + self.shared.forward_sorted(tokens, [tokens.shape[0]])
        task_ids = self._task_ids(b, x.device)
        if self.task_experts is not None:
            token_task = task_ids.repeat_interleave(n)
            order = torch.argsort(token_task, stable=True)
            counts = torch.bincount(token_task, minlength=self.num_tasks).tolist()
            out = self.task_experts.forward_sorted(tokens[order], counts)
            y = y + torch.empty_like(out).index_copy_(0, order, out)
        y = y.reshape(b, n, d)
        if self.task_head is not None:
            logits = self.task_head(y.mean(1))
            routing.aux[TASK_RECOGNITION] = F.cross_entropy(logits.float(), task_ids)
        return y, routing

    def forward(self, x: Tensor, identity: Tensor | None = None) -> Tensor:
        y, routing = self.mixture(x)
        if self.context is not None:
            self.context.routings[self.name] = routing
        return (x if identity is None else identity) + self.drop(y)
