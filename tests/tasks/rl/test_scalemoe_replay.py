"""zoo_tasks.rl.replay: a ring of the newest transitions, uniform batches, a checkpointable state."""

import numpy as np
import pytest
import torch

from zoo.errors import ConfigError
from zoo_tasks.rl.replay import ReplayBuffer


def test_replay_buffer_wraps_at_capacity_and_samples_batches():
    buf = ReplayBuffer(capacity=5, obs_dim=3, act_dim=2)
    for i in range(8):
        buf.add(np.full(3, i), np.full(2, -i), float(i), np.full(3, i + 1), terminated=(i == 7))
    assert len(buf) == 5 and buf.ptr == 3
    assert sorted(buf.reward.tolist()) == [3.0, 4.0, 5.0, 6.0, 7.0]  # the 3 oldest were overwritten
    assert buf.obs[0].tolist() == [5.0, 5.0, 5.0]  # slot 0 now holds transition 5
    batch = buf.sample(16)
    assert batch.obs.shape == (16, 3) and batch.action.shape == (16, 2) and batch.next_obs.shape == (16, 3)
    assert batch.reward.shape == batch.terminated.shape == (16,)
    torch.testing.assert_close(batch.next_obs, batch.obs + 1)  # fields of one transition stay together
    torch.testing.assert_close(batch.action[:, 0], -batch.obs[:, 0])
    assert set(batch.reward.tolist()) <= {3.0, 4.0, 5.0, 6.0, 7.0}
    assert batch.terminated[batch.reward == 7.0].eq(1).all() and batch.terminated[batch.reward != 7.0].eq(0).all()


def test_replay_buffer_state_round_trip_checks_shape():
    buffer = ReplayBuffer(8, 3, 2)
    for i in range(11):  # wraps around the ring
        buffer.add(torch.full((3,), float(i)), torch.zeros(2), i, torch.ones(3), i % 2 == 0)
    copy_ = ReplayBuffer(8, 3, 2)
    copy_.load_state_dict(buffer.state_dict())
    assert (copy_.ptr, copy_.size) == (3, 8) and torch.equal(copy_.obs, buffer.obs)
    assert torch.equal(copy_.terminated, buffer.terminated)
    torch.manual_seed(0)
    expect = buffer.sample(4)
    torch.manual_seed(0)
    assert all(torch.equal(a, b) for a, b in zip(copy_.sample(4), expect))  # same transitions, same draws
    with pytest.raises(ConfigError, match=r"does not match.*model\.buffer_capacity"):
        ReplayBuffer(8, 4, 2).load_state_dict(buffer.state_dict())
    with pytest.raises(ConfigError, match=r"does not match"):
        ReplayBuffer(9, 3, 2).load_state_dict(buffer.state_dict())


def test_bad_capacity_and_empty_sample():
    with pytest.raises(ConfigError, match="buffer_capacity"):
        ReplayBuffer(0, 3, 2)
    with pytest.raises(RuntimeError, match="empty"):
        ReplayBuffer(4, 3, 2).sample(2)
