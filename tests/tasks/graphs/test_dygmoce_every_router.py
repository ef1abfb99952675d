"""Every router in zoo.moe.ROUTERS through DyGMoCE's curvature-expert mixtures for one training step; routers
whose choice depends on the rest of the batch (expert choice) are refused with ConfigError."""

from __future__ import annotations

import warnings

import pytest
import torch

from zoo.errors import ConfigError
from zoo.moe import ROUTERS, require_router
from zoo.moe.testing import check_router_step
from zoo_tasks.graphs.dynamic.data import DynamicLinkDataModule
from zoo_tasks.graphs.dynamic.module import DynamicLinkPredictor


def applies(router: str) -> bool:
    try:
        require_router(router, "DyGMoCE", needs=("per_token_choice",))
    except ConfigError:
        return False
    return True


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    path = tmp_path_factory.mktemp("dyg") / "tiny.csv"
    path.write_text("\n".join(f"{i % 7},{(i + 2) % 7},{i}" for i in range(80)) + "\n")
    dm = DynamicLinkDataModule(path=str(path), batch_size=16, max_sequence_length=4, feature_width=4)
    dm.setup()
    return next(iter(dm.train_dataloader()))


@pytest.mark.parametrize("router", sorted(ROUTERS))
def test_every_router_trains_one_step(router, batch):
    torch.manual_seed(0)
    kwargs = dict(method="dygmoce", node_dim=4, edge_dim=4, time_dim=4, channel_dim=4, num_layers=1, num_experts=3,
                  router=router, top_k=2)  # fmt: skip
    if not applies(router):
        with pytest.raises(ConfigError, match=rf"router {router!r} cannot route .*routers that apply"):
            DynamicLinkPredictor(**kwargs)
        return
    model = DynamicLinkPredictor(**kwargs)
    model.train()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = model.training_step(batch, 0)
    check_router_step(model, out["loss"], out["routing"])
