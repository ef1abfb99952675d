"""Grouped routing: shared + hard task-assigned + dynamic top-k experts (DroneDINO's heterogeneous MoE)."""

from __future__ import annotations

import torch
from torch import Tensor, nn

from zoo.moe.routers.base import Router, broadcast_condition
from zoo.moe.routing import Routing


class GroupedRouter(Router):
    """Experts form three groups, laid out by id as ``[shared | task 0 | task 1 | ... | dynamic]``.

    - ``num_shared_group`` shared experts: every token, weight 1.
    - ``experts_per_task`` experts per task for ``num_tasks`` tasks: only tokens of that task, weight 1.
    - the remaining ``D = E - shared - num_tasks * experts_per_task`` dynamic experts: softmax top-k over a
      gate on ``[x ; condition]`` (T, D), renormalised.
    The task id per token comes from ``condition``: a one-hot/logit vector (..., num_tasks) (arg-max) or
    an id (..., 1). indices/weights (T, shared + experts_per_task + k); logits/probs (T, E) are zero
    outside the dynamic group, and the balance aux losses cover the dynamic group only.
    """

    def __init__(
        self,
        dim: int,
        num_experts: int,
        top_k: int = 2,
        condition_dim: int = 0,
        num_tasks: int = 1,
        experts_per_task: int = 0,
        num_shared_group: int = 0,
    ):
        super().__init__(dim, num_experts, top_k, condition_dim)
        self.num_tasks, self.experts_per_task, self.num_shared_group = (
            num_tasks,
            experts_per_task,
            num_shared_group,
        )
        self.num_dynamic = num_experts - num_shared_group - num_tasks * experts_per_task
        if self.num_dynamic < (1 if top_k else 0) or self.num_dynamic < top_k:
            raise ValueError(
                f"GroupedRouter: {num_experts} experts leave {self.num_dynamic} dynamic ones for top_k={top_k}"
            )
        self.gate = nn.Linear(dim + condition_dim, max(self.num_dynamic, 1), bias=False)

    def task_ids(self, condition: Tensor | None, lead_shape: tuple[int, ...]) -> Tensor:
        if condition is None:
            if self.experts_per_task and self.num_tasks > 1:
                raise ValueError("GroupedRouter with task experts needs condition= (task one-hot or id)")
            return torch.zeros(lead_shape[0], dtype=torch.long)
        c = broadcast_condition(condition, lead_shape)
        if c.shape[-1] == 1:
            return c[:, 0].round().long()
        return c.argmax(-1)

    def forward(self, x: Tensor, condition: Tensor | None = None, valid: Tensor | None = None) -> Routing:
        T, E, S, P = x.shape[0], self.num_experts, self.num_shared_group, self.experts_per_task
        dev = x.device
        parts_idx = [torch.arange(S, device=dev).expand(T, S)]
        if P:
            task = self.task_ids(condition, x.shape[:-1]).to(dev).clamp(0, self.num_tasks - 1)
            parts_idx.append(S + task[:, None] * P + torch.arange(P, device=dev))
        fixed = torch.cat(parts_idx, dim=1)
        logits = x.new_zeros(T, E, dtype=torch.float32)
        probs = torch.zeros_like(logits)
        idx, w = fixed, torch.ones(fixed.shape, device=dev)
        if self.top_k and self.num_dynamic:
            dyn_logits = self.compute_logits(x, condition)
            dyn_probs = torch.softmax(dyn_logits, dim=-1)
            top_w, top_i = dyn_probs.topk(self.top_k, dim=-1)
            top_w = top_w / top_w.sum(-1, keepdim=True).clamp_min(1e-9)
            offset = E - self.num_dynamic
            logits = torch.cat([logits[:, :offset], dyn_logits], dim=1)
            probs = torch.cat([probs[:, :offset], dyn_probs], dim=1)
            idx, w = torch.cat([fixed, top_i + offset], 1), torch.cat([w, top_w], 1)
            dynamic = self.finish(Routing(top_i, top_w, dyn_logits, valid, probs=dyn_probs))
            aux = dict(dynamic.aux)
        else:
            aux = {"load_balance": logits.new_zeros(()), "z": logits.new_zeros(())}
        return Routing(idx, w, logits, valid, probs=probs, aux=aux)
