"""Baselines of the WestWorld task that do not read variate tokens: an MLP dynamics ensemble and repeat-last.

`MLPEnsemble` (the PETS / MBPO-style ensemble of the reference's ``MLPEnsemble``; Chua et al. 2018): ``members``
MLPs ``[s_t | a_t] (Do + Da) -> s_{t+1} - s_t (Do)`` for ONE robot, trained on its one-step pairs with MSE and
rolled out autoregressively with the members' mean. `repeat_last`: the last prefix observation for every future
step, the floor every model must beat; `predict_mean`: the robot's mean state (0 in the normalised space), the
second floor (what a model that ignores the prefix and the actions reaches).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn


class MLPEnsemble(nn.Module):
    """``members`` independent MLPs over a robot's flat state and action: (..., Do + Da) -> (members, ..., Do)."""

    def __init__(self, obs_dim: int, act_dim: int, hidden: int = 200, layers: int = 3, members: int = 5):
        super().__init__()
        self.obs_dim, self.act_dim = obs_dim, act_dim

        def mlp() -> nn.Sequential:
            dims = [obs_dim + act_dim] + [hidden] * layers
            mods: list[nn.Module] = []
            for a, b in zip(dims[:-1], dims[1:]):
                mods += [nn.Linear(a, b), nn.SiLU()]
            return nn.Sequential(*mods, nn.Linear(hidden, obs_dim))

        self.members = nn.ModuleList(mlp() for _ in range(members))

    def forward(self, x: Tensor) -> Tensor:
        return torch.stack([m(x) for m in self.members])

    def loss(self, x: Tensor, valid: Tensor) -> Tensor:
        """One-step MSE over every (t, t+1) pair of windows x (B, T, Do + Da); ``valid`` (Do,) bool."""
        do = self.obs_dim
        delta = self(x[:, :-1]) - (x[:, 1:, :do] - x[:, :-1, :do])
        return (delta.pow(2) * valid).sum() / (valid.sum() * delta[..., 0].numel()).clamp_min(1)

    @torch.no_grad()
    def rollout(self, x: Tensor, prefix: int) -> Tensor:
        """Predicted states (B, T - prefix, Do) from the state at ``prefix - 1`` under the window's actions."""
        do = self.obs_dim
        s = x[:, prefix - 1, :do]
        out = []
        for t in range(prefix - 1, x.shape[1] - 1):
            s = s + self(torch.cat([s, x[:, t, do:]], -1)).mean(0)
            out.append(s)
        return torch.stack(out, 1)


def repeat_last(x: Tensor, obs_dim: int, prefix: int) -> Tensor:
    """(B, T, M) -> (B, T - prefix, Do): the last prefix observation, repeated."""
    return x[:, prefix - 1 : prefix, :obs_dim].expand(-1, x.shape[1] - prefix, -1)


def predict_mean(x: Tensor, obs_dim: int, prefix: int) -> Tensor:
    """(B, T, M) -> (B, T - prefix, Do) zeros: the robot's mean state in the normalised space."""
    return x.new_zeros(x.shape[0], x.shape[1] - prefix, obs_dim)
