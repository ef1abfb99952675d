"""WestWorld's system gate routes one token per (sample, observation variate): the system token of that variate's
sequence, in every Sys-MoE block. (Every router trained through the real module: the conformance suite.)"""

import torch

from zoo_tasks.worldmodel.data import token_struct
from zoo_tasks.worldmodel.module import WorldModel
from zoo_tasks.worldmodel.robots import robot_structure


def test_one_gate_token_per_sample_and_observation_variate():
    s = robot_structure("dmc_cartpole")
    struct, dist = token_struct(s)
    batch = {"x": torch.randn(2, 7, s.obs_dim + s.act_dim), "obs_dim": s.obs_dim, "struct": struct, "dist": dist,
             "obs_valid": torch.ones(s.obs_dim, dtype=torch.bool), "robot": "dmc_cartpole"}  # fmt: skip
    torch.manual_seed(0)
    model = WorldModel(method="westworld", bins=16, dim=8, blocks=2, heads=2, ffn_hidden=8, d_state=2, prefix=3)
    _, routings = model.train().loss_and_routing(batch)
    assert set(routings) == {"block0", "block1"}
    assert all(r.num_tokens == 2 * s.obs_dim for r in routings.values())  # s.obs_dim == 4 observation variates
