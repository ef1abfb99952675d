"""HeteroMoEFFN (no mmdet needed): the sorted fast path equals a per-token reference; the ablations; the loss."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from zoo.moe import weighted_aux_loss
from zoo_tasks.detection.moe_ffn import TASK_RECOGNITION, HeteroMoEFFN, MoEContext


def _block(**kw) -> HeteroMoEFFN:
    torch.manual_seed(0)
    block = HeteroMoEFFN(embed_dims=8, feedforward_channels=16, num_tasks=3, num_dynamic=4, top_k=2, **kw)
    block.context = MoEContext(task_ids=torch.tensor([2, 0, 2]))
    return block


def test_fast_path_equals_per_token_reference():
    block = _block()
    x = torch.randn(3, 5, 8)
    y = block(x)
    routing = block.context.routings["moe"]
    tokens = x.reshape(-1, 8)
    token_task = torch.tensor([2, 0, 2]).repeat_interleave(5)
    ref = []
    for t in range(tokens.shape[0]):
        v = tokens[t : t + 1]
        out = block.shared.forward_expert(0, v) + block.task_experts.forward_expert(int(token_task[t]), v)
        for e, w in zip(routing.indices[t], routing.weights[t]):
            out = out + w * block.dynamic.experts.forward_expert(int(e), v)
        ref.append(v + out)
    torch.testing.assert_close(y.reshape(-1, 8), torch.cat(ref), atol=1e-5, rtol=1e-5)


def test_task_expert_only_touches_its_own_task():
    block = _block()
    x = torch.randn(3, 5, 8)
    base = block(x)
    with torch.no_grad():
        block.task_experts.b2[1] += 10.0  # expert of task 1: no image of task 1 in the batch
    torch.testing.assert_close(block(x), base)
    with torch.no_grad():
        block.task_experts.b2[0] += 10.0  # task 0 = image 1 only
    moved = (block(x) - base).abs().amax(dim=(1, 2))
    assert moved[1] > 5 and moved[0] == 0 and moved[2] == 0


def test_topk_ablation_is_the_plain_zoo_moe():
    block = _block(shared=False, task_specific=False, task_recognition=False)
    block.context = None  # needs no task ids
    x = torch.randn(2, 4, 8)
    y_moe, routing = block.dynamic(x.reshape(-1, 8))
    torch.testing.assert_close(block(x), x + y_moe.reshape(2, 4, 8))
    assert TASK_RECOGNITION not in routing.aux


def test_task_recognition_loss_is_the_task_head_cross_entropy():
    block = _block()
    x = torch.randn(3, 5, 8)
    y, routing = block.mixture(x)
    expected = F.cross_entropy(block.task_head(y.mean(1)), torch.tensor([2, 0, 2]))
    torch.testing.assert_close(routing.aux[TASK_RECOGNITION], expected)
    total = weighted_aux_loss({"a": routing}, {"load_balance": 0.0, TASK_RECOGNITION: 0.5})
    torch.testing.assert_close(total, 0.5 * expected)


def test_task_experts_without_task_ids_fail_clearly():
    block = _block()
    block.context = MoEContext()
    with pytest.raises(RuntimeError, match="need the images' task ids"):
        block(torch.randn(1, 2, 8))
