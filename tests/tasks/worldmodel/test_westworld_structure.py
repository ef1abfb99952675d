import pytest
import torch

from zoo.errors import ConfigError
from zoo_tasks.worldmodel.data import token_struct
from zoo_tasks.worldmodel.model import MaskedAttention, WestWorldNet
from zoo_tasks.worldmodel.robots import FEW_SHOT, PRETRAIN, ROBOTS, ZERO_SHOT, robot, robot_structure


def test_robot_set_holds_out_walker2d_and_hopper():
    assert len(set(ROBOTS)) >= 15 and len(PRETRAIN) == 12
    assert set(ZERO_SHOT) == {"gym_walker2d", "gym_hopper"}
    assert not ({*ZERO_SHOT, FEW_SHOT} & set(PRETRAIN))
    with pytest.raises(ConfigError, match="unknown robot 'nope'.*gym_hopper"):
        robot("nope")


def test_hopper_structure_from_its_mjcf():
    s = robot_structure("gym_hopper")
    assert s.bodies == ("torso", "thigh", "leg", "foot")
    assert s.parents == (-1, 0, 1, 2)
    assert s.pre == (0, 1, 2, 3) and s.post == (3, 2, 1, 0) and s.depth == (0, 1, 2, 3)
    # rootx position is dropped (unbounded), its velocity kept
    assert "rootx.qpos" not in s.obs_names and "rootx.qvel" in s.obs_names
    assert s.obs_dim == 11 and s.act_dim == 3
    assert s.act_body == (1, 2, 3)  # thigh, leg, foot joints' motors
    assert s.obs_body[s.obs_names.index("foot_joint.qvel")] == 3
    assert s.tree_distance()[0, 3] == 3


def test_walker_mirror_order_reverses_siblings():
    s = robot_structure("gym_walker2d")
    right, left = s.bodies.index("thigh"), s.bodies.index("thigh_left")
    assert s.pre[right] < s.pre[left] and s.mirror[right] > s.mirror[left]


def test_structural_mask_follows_tree_distance():
    s = robot_structure("gym_hopper")
    struct, dist = token_struct(s)
    net = WestWorldNet(bins=8, dim=8, blocks=1, heads=2, ffn_hidden=8, d_state=2, mask_hops=1)
    oo, oa = net.masks(dist, s.obs_dim)
    for i in range(s.obs_dim):
        for j in range(s.obs_dim):
            hops = s.tree_distance()[s.obs_body[i], s.obs_body[j]]
            assert bool(oo[i, j]) == (hops <= 1)
        for j in range(s.act_dim):
            assert bool(oa[i, j]) == (s.tree_distance()[s.obs_body[i], s.act_body[j]] <= 1)
    assert WestWorldNet(bins=8, dim=8, blocks=1, heads=2, ffn_hidden=8, d_state=2, structure=False).masks(
        dist, s.obs_dim
    ) == (None, None)


def test_masked_attention_ignores_disallowed_keys_and_zeroes_empty_rows():
    torch.manual_seed(0)
    attn = MaskedAttention(8, 2, 0.0)
    q, k = torch.randn(1, 3, 8), torch.randn(1, 4, 8)
    allow = torch.tensor([[1, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 0]], dtype=torch.bool)
    out = attn(q, k, allow)
    k2 = k.clone()
    k2[:, 3] += 5.0  # no query may see key 3
    k2[:, 0] += 0.0
    assert torch.allclose(attn(q, k2, allow), out, atol=1e-6)
    k3 = k.clone()
    k3[:, 2] += 5.0  # only query 1 sees key 2
    out3 = attn(q, k3, allow)
    assert torch.allclose(out3[:, 0], out[:, 0], atol=1e-6) and not torch.allclose(out3[:, 1], out[:, 1])
    assert torch.allclose(out[:, 2], attn.o.bias.expand(1, 8))  # nothing to attend to: zero context
