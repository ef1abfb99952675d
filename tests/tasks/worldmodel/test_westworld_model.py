import pytest
import torch

from zoo.errors import ConfigError
from zoo_tasks.worldmodel.baselines import MLPEnsemble, repeat_last
from zoo_tasks.worldmodel.data import token_struct
from zoo_tasks.worldmodel.module import METHODS, WorldModel
from zoo_tasks.worldmodel.robots import robot_structure

SMALL = dict(bins=32, dim=16, blocks=2, heads=2, ffn_hidden=16, d_state=4, prefix=4)


def _batch(robot="gym_hopper", b=3, t=12, seed=0):
    s = robot_structure(robot)
    struct, dist = token_struct(s)
    g = torch.Generator().manual_seed(seed)
    x = torch.cumsum(0.2 * torch.randn(b, t, s.obs_dim + s.act_dim, generator=g), dim=1)
    return {"x": x, "obs_dim": s.obs_dim, "obs_valid": torch.ones(s.obs_dim, dtype=torch.bool), "struct": struct,
            "dist": dist, "robot": robot}  # fmt: skip


@pytest.mark.parametrize("method", ["westworld", "dense", "no_structure", "trajworld"])
def test_future_observations_never_reach_the_prediction(method):
    torch.manual_seed(0)
    model = WorldModel(method=method, **SMALL).eval()
    batch = _batch()
    pred, _ = model.predict_future(batch)
    assert pred.shape == (3, 8, batch["obs_dim"])
    leaked = {**batch, "x": batch["x"].clone()}
    leaked["x"][:, 4:, : batch["obs_dim"]] += 3.0  # the observations to predict
    assert torch.allclose(model.predict_future(leaked)[0], pred, atol=1e-5)
    acted = {**batch, "x": batch["x"].clone()}
    acted["x"][:, 6:, batch["obs_dim"] :] += 1.0  # later actions change the later predictions only
    moved = model.predict_future(acted)[0]
    if method != "westworld" and method != "no_structure":  # the system token sees the whole window's actions
        assert torch.allclose(moved[:, :2], pred[:, :2], atol=1e-5)
    assert not torch.allclose(moved[:, 3:], pred[:, 3:])


def test_westworld_loss_decreases_on_a_batch():
    torch.manual_seed(0)
    model = WorldModel(method="westworld", **SMALL)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    batch = _batch()
    first = None
    for _ in range(40):
        loss, _ = model.loss_and_routing(batch)
        first = float(loss) if first is None else first
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert float(loss) < 0.7 * first


def test_structure_changes_the_network_input():
    torch.manual_seed(0)
    model = WorldModel(method="westworld", **SMALL).eval()
    batch = _batch()
    perm = batch["struct"].clone()
    perm[:, :4] = perm[:, :4].flip(0)
    assert not torch.allclose(model.predict_future({**batch, "struct": perm})[0], model.predict_future(batch)[0])


def test_baselines():
    batch = _batch()
    x, do = batch["x"], batch["obs_dim"]
    last = repeat_last(x, do, 4)
    assert torch.equal(last[:, 5], x[:, 3, :do])
    mlp = MLPEnsemble(do, x.shape[-1] - do, hidden=16, members=3)
    assert mlp(x).shape == (3, 3, 12, do)
    assert mlp.rollout(x, 4).shape == (3, 8, do)
    opt = torch.optim.Adam(mlp.parameters(), lr=1e-2)
    first = float(mlp.loss(x, torch.ones(do)))
    for _ in range(50):
        loss = mlp.loss(x, torch.ones(do))
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert float(loss) < 0.5 * first


def test_unknown_method_names_the_choices():
    with pytest.raises(ConfigError, match="method.*westworld"):
        WorldModel(method="nope")
    assert "repeat_last" in METHODS


def test_learning_rate_schedule():
    model = WorldModel(method="repeat_last", warmup_steps=10, finetune_after=100, finetune_lr_scale=0.1)
    assert model.lr_factor(0) == pytest.approx(0.1) and model.lr_factor(50) == 1.0
    assert model.lr_factor(99) == 1.0 and model.lr_factor(100) == pytest.approx(0.1)
    assert WorldModel(method="repeat_last", warmup_steps=1).lr_factor(10**6) == 1.0
