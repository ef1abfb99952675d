"""A uniform replay buffer of transitions stored as preallocated CPU tensors (a ring over ``capacity``)."""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import Tensor

from zoo.errors import ConfigError


class Batch(NamedTuple):
    """B sampled transitions: obs (B, obs_dim), action (B, act_dim), reward (B,), next_obs (B, obs_dim),
    terminated (B,) float (1.0 where the episode truly ended, so no bootstrap; time limits are not terminal)."""

    obs: Tensor
    action: Tensor
    reward: Tensor
    next_obs: Tensor
    terminated: Tensor


class ReplayBuffer:
    """Uniform experience replay (Lin 1992; as in DQN and SAC): the newest ``capacity`` transitions.

    ``add`` writes one transition at ``ptr`` and advances it modulo ``capacity`` (oldest overwritten first);
    ``sample(B)`` draws B indices uniformly with replacement from the filled part, using torch's global RNG so
    ``seed_everything`` makes it reproducible. Observations are stored raw; the agent normalises at update time
    with its current running statistics, as the SimBa reference does.

    ``state_dict`` holds the filled part only (a 50k-step DeepMind Control run: a few MB), so the agent stores
    the buffer in its checkpoints and a resumed run replays the same transitions.
    """

    def __init__(self, capacity: int, obs_dim: int, act_dim: int):
        if capacity < 1:
            raise ConfigError(f"replay buffer capacity (model.buffer_capacity) must be >= 1, got {capacity}")
        self.capacity = capacity
        self.obs = torch.zeros(capacity, obs_dim)
        self.next_obs = torch.zeros(capacity, obs_dim)
        self.action = torch.zeros(capacity, act_dim)
        self.reward = torch.zeros(capacity)
        self.terminated = torch.zeros(capacity)
        self.ptr = 0
        self.size = 0

    def __len__(self) -> int:
        return self.size

    def add(self, obs, action, reward: float, next_obs, terminated: bool) -> None:
        i = self.ptr
        self.obs[i] = torch.as_tensor(obs)
        self.action[i] = torch.as_tensor(action)
        self.reward[i] = float(reward)
        self.next_obs[i] = torch.as_tensor(next_obs)
        self.terminated[i] = float(terminated)
        self.ptr = (i + 1) % self.capacity
        self.size = min(self.size + 1, self.capacity)

    def state_dict(self) -> dict:
        state = {name: getattr(self, name)[: self.size].clone() for name in Batch._fields}
        return state | {"ptr": self.ptr, "size": self.size, "capacity": self.capacity}

    def load_state_dict(self, state: dict) -> None:
        if state["capacity"] != self.capacity or state["obs"].shape[1:] != self.obs.shape[1:]:
            raise ConfigError(
                f"replay buffer in the checkpoint (capacity {state['capacity']}, obs {tuple(state['obs'].shape[1:])})"
                f" does not match this run's (capacity {self.capacity}, obs {tuple(self.obs.shape[1:])}): resume with"
                " the checkpoint's model.buffer_capacity, data.env and data.env_steps"
            )
        size = state["size"]
        for name in Batch._fields:
            getattr(self, name)[:size] = state[name]
        self.ptr, self.size = state["ptr"], size

    def sample(self, batch_size: int) -> Batch:
        if self.size == 0:
            raise RuntimeError("cannot sample from an empty replay buffer")
        idx = torch.randint(self.size, (batch_size,))
        return Batch(*(getattr(self, name)[idx] for name in Batch._fields))
