import json

import numpy as np
import pytest
import torch

from zoo.errors import ConfigError
from zoo_tasks.worldmodel import generate
from zoo_tasks.worldmodel.data import WestWorldDataModule

TINY_AGENT = dict(architecture="mlp", actor_hidden=8, critic_hidden=8, num_q=2, batch_size=4, learning_starts=4,
                  updates_per_step=1)  # fmt: skip
TINY = dict(train_robots=["dmc_cartpole"], eval_robots=["gym_hopper"], train_episodes=2, val_episodes=1,
            test_episodes=1, episodes_per_shard=1, episode_len=12, prefix=3, horizon=6, batch_size=2,
            pretrain_steps=3, policies=["uniform", "sac@6"], agent_settings=TINY_AGENT)  # fmt: skip


@pytest.mark.slow(reason="generates the data three times, training a SAC policy each")
def test_generation_is_deterministic_and_resumable(tmp_path):
    a, b = (
        WestWorldDataModule(data_dir=str(tmp_path / "a"), **TINY),
        WestWorldDataModule(data_dir=str(tmp_path / "b"), **TINY),
    )
    torch.manual_seed(123)
    rng, threads = torch.get_rng_state(), torch.get_num_threads()
    a.prepare_data()
    # training the behaviour agents leaves the caller's random state and thread count alone
    assert torch.equal(torch.get_rng_state(), rng) and torch.get_num_threads() == threads
    b.prepare_data()
    ma, mb = generate.load_manifest(a.root), generate.load_manifest(b.root)
    assert ma == mb and len(ma["shards"]) == 2 * (2 + 1) + 2 * (1 + 1)  # policies x (train + val) / (val + test)
    # one SAC agent per robot, trained to agent step 6, saved with the settings it was trained with
    assert [(g["robot"], g["agent_steps"], g["settings"]) for g in ma["agents"]] == [
        ("dmc_cartpole", 6, TINY_AGENT),
        ("gym_hopper", 6, TINY_AGENT),
    ]
    sac = [s for s in ma["shards"] if s["policy"] == "sac@6"]
    agents = {g["robot"]: g["sha256"] for g in ma["agents"]}
    assert sac and all(s["agent_sha256"] == agents[s["robot"]] for s in sac)
    for shard in ma["shards"]:
        assert (a.root / shard["file"]).read_bytes() == (b.root / shard["file"]).read_bytes()
        assert {"env", "policy", "seed", "steps", "sha256"} <= set(shard)
        assert shard["steps"] == shard["episodes"] * 12
    # a re-run rewrites nothing; a corrupted shard is regenerated to the same bytes
    first = ma["shards"][0]
    path = a.root / first["file"]
    stamp = {s["file"]: (a.root / s["file"]).stat().st_mtime_ns for s in ma["shards"]}
    a.prepare_data()
    assert {s["file"]: (a.root / s["file"]).stat().st_mtime_ns for s in ma["shards"]} == stamp
    path.write_bytes(b"broken")
    a.prepare_data()
    assert generate.sha256(path) == first["sha256"]
    assert json.loads((a.root / "structure" / "gym_hopper.json").read_text())["bodies"][0] == "torso"


def test_sac_policy_acts_from_its_agent_and_retrains_when_its_settings_change(tmp_path):
    dm = WestWorldDataModule(data_dir=str(tmp_path), **TINY)
    dm.prepare_data()
    manifest = generate.load_manifest(dm.root)
    shard = next(s for s in manifest["shards"] if s["policy"] == "sac@6" and s["robot"] == "dmc_cartpole")
    uniform = next(s for s in manifest["shards"] if s["policy"] == "uniform" and s["robot"] == "dmc_cartpole")
    actions = np.load(dm.root / shard["file"])[..., 4:]
    # the actor's tanh-squashed samples: inside (-1, 1) and not the uniform policy's draws
    assert np.abs(actions).max() < 1 and not np.array_equal(actions, np.load(dm.root / uniform["file"])[..., 4:])
    settings = {**TINY_AGENT, "actor_hidden": 12}
    other = WestWorldDataModule(data_dir=str(tmp_path), **{**TINY, "agent_settings": settings})
    other.prepare_data()
    after = generate.load_manifest(dm.root)
    assert all(g["settings"] == settings for g in after["agents"])
    redone = next(s for s in after["shards"] if s["file"] == shard["file"])
    assert redone["agent_sha256"] != shard["agent_sha256"] and redone["sha256"] != shard["sha256"]
    assert next(s for s in after["shards"] if s["file"] == uniform["file"]) == uniform  # scripted shards stay


def test_batches(tmp_path):
    dm = WestWorldDataModule(data_dir=str(tmp_path), **TINY)
    dm.prepare_data()
    dm.setup("fit")
    train = list(dm.train_dataloader())
    assert len(train) == 3
    b = train[0]
    assert b["x"].shape == (2, 9, 4 + 1) and b["obs_dim"] == 4 and b["struct"].shape == (5, 5)
    # normalised with the robot's train statistics
    tr = dm.train_data[0].episodes
    assert np.allclose(tr.reshape(-1, 5).mean(0), 0, atol=1e-4)  # float32 sums
    test = list(dm.test_dataloader())
    assert [t["robot"] for t in test] == ["gym_hopper", "dmc_cartpole"]
    assert [t["role"] for t in test] == ["heldout", "seen"]
    assert torch.equal(test[0]["x"], list(dm.test_dataloader())[0]["x"])
    assert [t["x"].shape[0] for t in dm.val_dataloader()] == [2]


def test_config_errors(tmp_path):
    with pytest.raises(ConfigError, match="train_robots: unknown robot 'walker'"):
        WestWorldDataModule(data_dir=str(tmp_path), train_robots=["walker"])
    with pytest.raises(ConfigError, match="prefix .* must fit in episode_len"):
        WestWorldDataModule(data_dir=str(tmp_path), prefix=50, horizon=60, episode_len=100)
    with pytest.raises(ConfigError, match="num_train_robots must be in 1..12"):
        WestWorldDataModule(data_dir=str(tmp_path), num_train_robots=13)
    with pytest.raises(ConfigError, match="finetune_robot"):
        WestWorldDataModule(data_dir=str(tmp_path), finetune_steps=5)
    with pytest.raises(ConfigError, match="unknown behaviour policy"):
        generate.rollout_shard("dmc_cartpole", "sac", 0, 1, 3)
    with pytest.raises(ConfigError, match="unknown behaviour policy 'sac@0'"):
        WestWorldDataModule(data_dir=str(tmp_path), policies=["uniform", "sac@0"])
