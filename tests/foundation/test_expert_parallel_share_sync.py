"""The expert-parallel strategy's first synchronisation (``zoo.distributed.strategy._sync_replicated``): rank 0's
weights everywhere except the expert banks a rank built as its own share, on a model that also holds torchmetrics
metrics, as every task's module does (a metric's ``__eq__`` returns a truthy metric, so a layer test by ``in`` on a
list took the metric for an MoE layer and ``zoo fit`` at world 2 failed on every task)."""

from __future__ import annotations

import torch
import torch.distributed as dist
import torchmetrics
from torch import nn

from zoo.distributed.strategy import _share_names, _sync_replicated
from zoo.moe import MoE, local_expert_init


class TaskLikeModule(nn.Module):
    """An MoE built as rank 0's half, an MoE built whole, and a metric, as in a task's LightningModule."""

    def __init__(self):
        super().__init__()
        with local_expert_init(ep_rank=0, ep_size=2):
            self.block = MoE(8, 16, num_experts=4, top_k=2)
        self.whole = MoE(8, 16, num_experts=4, top_k=2)
        self.test_mse = torchmetrics.MeanSquaredError()


def test_only_the_share_built_banks_are_left_out_of_the_sync():
    model = TaskLikeModule()
    assert _share_names(model) == {f"block.experts.{key}" for key in model.block.experts.state_dict()}
    assert model.block.experts.num_experts == 2 and model.whole.experts.num_experts == 4


def test_the_sync_runs_on_a_model_holding_metrics(tmp_path):
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1)
    try:
        model = TaskLikeModule()
        before = {k: v.clone() for k, v in model.state_dict().items()}
        _sync_replicated(model)
        assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
        assert not hasattr(model, "_ddp_params_and_buffers_to_ignore")
    finally:
        dist.destroy_process_group()
