"""The WestWorld datamodule: generates (``prepare_data``) and serves robot trajectory windows.

Every batch holds windows of ONE robot (robots differ in their number of tokens), as a dict:
    x (B, T, Do + Da) float32, normalised per robot and dim by its own mean / std (the robot's train split, or
        its val split for robots the model never trains on); T = prefix + horizon;
    obs_dim Do; obs_valid (Do,) bool (False for dims constant in the data, e.g. a fixed target's position);
    struct (M, 5) long (body pre / mirror / post / depth index, token kind), dist (M, M) long (tree distance
        between the bodies of two tokens); robot (str).

Training: ``pretrain_steps`` batches from ``train_robots`` (a robot drawn uniformly per batch, random windows),
then ``finetune_steps`` from ``finetune_robot``'s few-shot data (``finetune_episodes`` per behaviour policy).
Validation: the first window of every val episode of the training robots. Test: the first window of every test
episode of ``eval_robots`` (zero-shot robots never appear in training), then the training robots' val windows
(``role`` "seen", reported per robot only).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytorch_lightning as pl
import torch
from torch.utils.data import DataLoader, IterableDataset

from zoo.errors import ConfigError
from zoo_tasks.worldmodel import generate
from zoo_tasks.worldmodel.robots import PRETRAIN, ZERO_SHOT, RobotStructure, robot


def token_struct(s: RobotStructure) -> tuple[torch.Tensor, torch.Tensor]:
    """(M, 5) struct indices and (M, M) tree distance of a robot's [obs | action] tokens."""
    bodies = list(s.obs_body) + list(s.act_body)
    kinds = list(s.obs_kind) + [2] * s.act_dim
    struct = torch.tensor([[s.pre[b], s.mirror[b], s.post[b], s.depth[b], k] for b, k in zip(bodies, kinds)])
    tree = torch.as_tensor(s.tree_distance())
    idx = torch.tensor(bodies)
    return struct.long(), tree[idx][:, idx].long()


class RobotData:
    """One robot's episodes of one split, normalised: ``episodes`` (E, L, M) float32."""

    def __init__(self, name: str, structure: RobotStructure, episodes: np.ndarray, mean, std):
        self.name, self.structure = name, structure
        self.valid = std > 1e-6
        self.episodes = np.where(self.valid, (episodes - mean) / np.where(self.valid, std, 1.0), 0.0).astype(np.float32)
        self.struct, self.dist = token_struct(structure)

    def batch(self, windows: np.ndarray) -> dict:
        do = self.structure.obs_dim
        return {
            "x": torch.from_numpy(windows),
            "obs_dim": do,
            "obs_valid": torch.from_numpy(self.valid[:do].copy()),
            "struct": self.struct,
            "dist": self.dist,
            "robot": self.name,
        }


class _TrainStream(IterableDataset):
    def __init__(self, phases: list[tuple[list[RobotData], int]], batch_size: int, length: int, seed: int):
        self.phases, self.batch_size, self.length, self.seed = phases, batch_size, length, seed
        self.epoch = 0

    def __iter__(self):
        rng = np.random.default_rng([self.seed, self.epoch])
        self.epoch += 1
        for robots, steps in self.phases:
            for _ in range(steps):
                r = robots[rng.integers(len(robots))]
                e = rng.integers(0, r.episodes.shape[0], self.batch_size)
                s = rng.integers(0, r.episodes.shape[1] - self.length + 1, self.batch_size)
                yield r.batch(np.stack([r.episodes[i, j : j + self.length] for i, j in zip(e, s)]))

    def __len__(self) -> int:
        return sum(steps for _, steps in self.phases)


def _eval_batches(robots: list[RobotData], batch_size: int, length: int, role: str = "heldout") -> list[dict]:
    out = []
    for r in robots:
        for i in range(0, r.episodes.shape[0], batch_size):
            out.append({**r.batch(r.episodes[i : i + batch_size, :length].copy()), "role": role})
    return out


class WestWorldDataModule(pl.LightningDataModule):
    """Generated multi-robot trajectories (see the module docstring and `zoo_tasks.worldmodel.generate`).

    ``policies``: the behaviour policies (`zoo_tasks.worldmodel.behaviour`; default uniform, OU noise and SAC
    snapshots after 2.5k / 5k / 10k agent steps); each split holds its ``*_episodes`` count of every one of them.
    ``agent_settings``: the `SACAgent` arguments of the behaviour agents (default ``behaviour.AGENT``).
    """

    def __init__(
        self,
        data_dir: str | None = None,
        train_robots: list[str] | None = None,
        num_train_robots: int | None = None,
        eval_robots: list[str] | None = None,
        finetune_robot: str | None = None,
        train_episodes: int = 32,
        val_episodes: int = 4,
        test_episodes: int = 8,
        finetune_episodes: int = 10,
        episodes_per_shard: int = 8,
        episode_len: int = 100,
        prefix: int = 20,
        horizon: int = 60,
        batch_size: int = 8,
        pretrain_steps: int = 1000,
        finetune_steps: int = 0,
        seed: int = 0,
        policies: list[str] | None = None,
        agent_settings: dict | None = None,
    ):
        super().__init__()
        self.save_hyperparameters()
        self.policies = list(generate.DEFAULT_POLICIES if policies is None else policies)
        if not self.policies:
            raise ConfigError("data.init_args.policies: give at least one behaviour policy")
        for policy in self.policies:
            generate.sac_steps(policy)
        train = list(PRETRAIN if train_robots is None else train_robots)
        if num_train_robots is not None:
            if not 1 <= num_train_robots <= len(train):
                raise ConfigError(f"num_train_robots must be in 1..{len(train)} (train_robots), got {num_train_robots}")
            train = train[:num_train_robots]
        self.train_robots = train
        self.eval_robots = list(ZERO_SHOT if eval_robots is None else eval_robots)
        for key, names in (("train_robots", self.train_robots), ("eval_robots", self.eval_robots)):
            for name in names:
                robot(name, f"data.init_args.{key}")
        if finetune_robot is not None:
            robot(finetune_robot, "data.init_args.finetune_robot")
        if finetune_steps and finetune_robot is None:
            raise ConfigError("data.init_args.finetune_steps > 0 needs data.init_args.finetune_robot")
        if prefix < 1 or horizon < 1 or prefix + horizon > episode_len:
            raise ConfigError(
                f"data.init_args.prefix ({prefix}) + horizon ({horizon}) must fit in episode_len ({episode_len}), "
                "both >= 1"
            )
        self.root = generate.dataset_root(data_dir, episode_len)
        self.length = prefix + horizon

    def _plan(self) -> list[dict]:
        h = self.hparams
        per = h.episodes_per_shard
        pol = self.policies
        shards = generate.plan(self.train_robots, {"train": h.train_episodes, "val": h.val_episodes}, per, pol)
        shards += generate.plan(self.eval_robots, {"val": h.val_episodes, "test": h.test_episodes}, per, pol)
        if h.finetune_robot is not None:
            shards += generate.plan([h.finetune_robot], {"train": h.finetune_episodes}, per, pol)
        unique = {(s["robot"], s["policy"], s["split"], s["index"]): s for s in shards}
        return list(unique.values())

    def prepare_data(self) -> None:
        generate.prepare(self.root, self._plan(), self.hparams.episode_len, self.hparams.agent_settings)

    def _episodes(self, name: str, split: str, count: int) -> np.ndarray:
        manifest = generate.load_manifest(self.root)
        per_policy = []
        for policy in self.policies:
            shards = sorted(
                (s for s in manifest["shards"] if (s["robot"], s["policy"], s["split"]) == (name, policy, split)),
                key=lambda s: s["index"],
            )
            arrays = [np.load(self.root / s["file"]) for s in shards]
            got = sum(a.shape[0] for a in arrays)
            if got < count:
                raise ConfigError(f"{self.root}: robot {name!r} has {got} {split} episodes of {policy}, need {count}")
            per_policy.append(np.concatenate(arrays)[:count])
        return np.concatenate(per_policy)

    def _robot(self, name: str, split: str, count: int, stats: np.ndarray) -> RobotData:
        s = generate.structure(self.root, name)
        flat = stats.reshape(-1, stats.shape[-1])
        return RobotData(name, s, self._episodes(name, split, count), flat.mean(0), flat.std(0))

    def setup(self, stage: str | None = None) -> None:
        if getattr(self, "_ready", False):
            return
        have = {(s["robot"], s["policy"], s["split"], s["index"]) for s in generate.load_manifest(self.root)["shards"]}
        if any((s["robot"], s["policy"], s["split"], s["index"]) not in have for s in self._plan()):
            self.prepare_data()  # used outside a Trainer (which calls prepare_data first)
        h = self.hparams
        self.train_data, self.val_data = [], []
        for name in self.train_robots:
            tr = self._episodes(name, "train", h.train_episodes)
            self.train_data.append(self._robot(name, "train", h.train_episodes, tr))
            self.val_data.append(self._robot(name, "val", h.val_episodes, tr))
        self.finetune_data = []
        if h.finetune_robot is not None:
            ft = self._episodes(h.finetune_robot, "train", h.finetune_episodes)
            self.finetune_data = [self._robot(h.finetune_robot, "train", h.finetune_episodes, ft)]
        self.test_data = []
        for name in self.eval_robots:
            stats = (
                self._episodes(name, "train", h.finetune_episodes)
                if name == h.finetune_robot
                else self._episodes(name, "val", h.val_episodes)
            )
            self.test_data.append(self._robot(name, "test", h.test_episodes, stats))
        self._ready = True

    def train_dataloader(self):
        h = self.hparams
        phases = [(self.train_data, h.pretrain_steps)]
        if h.finetune_steps:
            phases.append((self.finetune_data, h.finetune_steps))
        return DataLoader(_TrainStream(phases, h.batch_size, self.length, h.seed), batch_size=None)

    def val_dataloader(self):
        return DataLoader(_eval_batches(self.val_data, self.hparams.batch_size, self.length), batch_size=None)

    def test_dataloader(self):
        """The eval robots' test windows, then the training robots' val windows (role "seen": reported per robot
        and in the system-gate heatmap, never pooled into test/mae)."""
        b, n = self.hparams.batch_size, self.length
        held = [r for r in self.test_data]
        return DataLoader(_eval_batches(held, b, n) + _eval_batches(self.val_data, b, n, "seen"), batch_size=None)

    def data_sha256(self) -> dict[str, str]:
        manifest = generate.load_manifest(Path(self.root))
        return {s["file"]: s["sha256"] for s in manifest["shards"]}
