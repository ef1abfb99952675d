"""Reproducible trajectory data for the WestWorld task: simulator rollouts under scripted behaviour policies.

Layout under ``root = <data_dir>/westworld-v1-L<episode_len>/``::

    manifest.json                      {"shards": [{robot, env, policy, split, index, seed, episodes, steps,
                                                     obs_dim, act_dim, file, sha256}, ...]}
    structure/<robot>.json             the robot's `RobotStructure`, parsed once from its MJCF
    <robot>/<policy>_<split>_<k>.npy   float32 (episodes, episode_len, obs_dim + act_dim): row t = [state_t, a_t]

A shard's seed is a hash of (robot, policy, split, k), so a shard does not depend on which other robots are
generated; the env, the policy and numpy's ``.npy`` writer are deterministic, so re-running writes the same bytes
(the manifest's sha256 checks it; a shard whose file is missing or differs is regenerated).

Behaviour policies (actions in [-1, 1]):
    uniform: a_t ~ U[-1, 1] independently per step;
    ou:      temporally correlated noise, a_t = clip(rho a_{t-1} + sqrt(1 - rho^2) sigma eps_t), rho 0.9, sigma 0.6.
Trained-agent (SAC checkpoint) behaviour is not generated yet.
"""

from __future__ import annotations

import hashlib
import json
import os
import zlib
from pathlib import Path

import numpy as np

from zoo.errors import ConfigError
from zoo_tasks.worldmodel.robots import RobotStructure, make_robot_env, parse_structure, robot

POLICIES = ("uniform", "ou")
SPLITS = ("train", "val", "test")
OU_RHO, OU_SIGMA = 0.9, 0.6


def default_data_dir() -> Path:
    """``$ZOO_CACHE_DIR/worldmodel`` or ``~/.cache/moe-zoo/worldmodel``."""
    base = os.environ.get("ZOO_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "moe-zoo")
    return Path(base) / "worldmodel"


def dataset_root(data_dir: str | os.PathLike | None, episode_len: int) -> Path:
    return Path(data_dir or default_data_dir()) / f"westworld-v1-L{episode_len}"


def shard_seed(robot_name: str, policy: str, split: str, index: int) -> int:
    return zlib.crc32(f"{robot_name}/{policy}/{split}/{index}".encode()) & 0x7FFFFFFF


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


class _Policy:
    def __init__(self, kind: str, act_dim: int, rng: np.random.Generator):
        if kind not in POLICIES:
            raise ConfigError(f"policies: unknown behaviour policy {kind!r}; valid: {', '.join(POLICIES)}")
        self.kind, self.act_dim, self.rng = kind, act_dim, rng
        self.prev = np.zeros(act_dim)

    def reset(self) -> None:
        self.prev = self.rng.uniform(-1, 1, self.act_dim) if self.kind == "ou" else np.zeros(self.act_dim)

    def __call__(self) -> np.ndarray:
        if self.kind == "uniform":
            return self.rng.uniform(-1.0, 1.0, self.act_dim)
        noise = self.rng.normal(0.0, OU_SIGMA, self.act_dim)
        self.prev = np.clip(OU_RHO * self.prev + np.sqrt(1 - OU_RHO**2) * noise, -1.0, 1.0)
        return self.prev


def rollout_shard(robot_name: str, policy: str, seed: int, episodes: int, episode_len: int) -> np.ndarray:
    """(episodes, episode_len, obs_dim + act_dim) float32 rollouts of ``robot_name`` under ``policy``."""
    env, handles = make_robot_env(robot_name, seed=seed)
    try:
        model, _ = handles()
        structure = parse_structure(robot_name, model, robot(robot_name).locomotion)
        index = np.asarray(structure.state_index)
        pol = _Policy(policy, structure.act_dim, np.random.default_rng(seed))
        out = np.zeros((episodes, episode_len, structure.obs_dim + structure.act_dim), dtype=np.float32)
        for e in range(episodes):
            env.reset()
            pol.reset()
            for t in range(episode_len):
                _, data = handles()
                state = np.concatenate([data.qpos, data.qvel])[index]
                action = pol().astype(np.float32)
                out[e, t, : structure.obs_dim] = state
                out[e, t, structure.obs_dim :] = action
                _, _, terminated, truncated, _ = env.step(action)
                if (terminated or truncated) and t < episode_len - 1:
                    raise ConfigError(
                        f"robot {robot_name!r}: its env ended an episode after {t + 1} steps, before "
                        f"episode_len={episode_len}; use a shorter episode_len"
                    )
        return out
    finally:
        env.close()


def load_manifest(root: Path) -> dict:
    path = root / "manifest.json"
    return json.loads(path.read_text()) if path.is_file() else {"version": 1, "shards": []}


def _write_json(path: Path, obj) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(obj, indent=1, sort_keys=True) + "\n")
    tmp.replace(path)


def structure(root: Path, robot_name: str) -> RobotStructure:
    """The cached `RobotStructure` of ``robot_name`` (parsed from its MJCF on first use)."""
    path = root / "structure" / f"{robot_name}.json"
    if path.is_file():
        return RobotStructure.from_dict(json.loads(path.read_text()))
    from zoo_tasks.worldmodel.robots import robot_structure

    s = robot_structure(robot_name)
    _write_json(path, s.to_dict())
    return s


def plan(robots, episodes: dict[str, int], episodes_per_shard: int, policies=POLICIES) -> list[dict]:
    """The shards to generate: per robot, policy and split, ``ceil(episodes[split] / episodes_per_shard)``."""
    bad = sorted(set(episodes) - set(SPLITS))
    if bad:
        raise ConfigError(f"episodes: unknown split(s) {bad}; valid: {', '.join(SPLITS)}")
    if episodes_per_shard < 1:
        raise ConfigError(f"episodes_per_shard must be >= 1, got {episodes_per_shard}")
    shards = []
    for name in robots:
        robot(name, "robots")
        for policy in policies:
            for split, count in episodes.items():
                for k in range(-(-int(count) // episodes_per_shard)):
                    n = min(episodes_per_shard, int(count) - k * episodes_per_shard)
                    shards.append(
                        {"robot": name, "policy": policy, "split": split, "index": k, "episodes": n,
                         "seed": shard_seed(name, policy, split, k)}
                    )  # fmt: skip
    return shards


def prepare(root: Path, shards: list[dict], episode_len: int, log=print) -> dict:
    """Generate every planned shard that is missing or whose file no longer matches its manifest sha256; write
    the structures and the manifest. Returns the manifest."""
    manifest = load_manifest(root)
    known = {(s["robot"], s["policy"], s["split"], s["index"]): s for s in manifest["shards"]}
    for shard in shards:
        key = (shard["robot"], shard["policy"], shard["split"], shard["index"])
        rel = f"{shard['robot']}/{shard['policy']}_{shard['split']}_{shard['index']}.npy"
        path = root / rel
        old = known.get(key)
        if old and old["episodes"] == shard["episodes"] and path.is_file() and sha256(path) == old["sha256"]:
            continue
        s = structure(root, shard["robot"])
        data = rollout_shard(shard["robot"], shard["policy"], shard["seed"], shard["episodes"], episode_len)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp.npy")
        np.save(tmp, data)
        tmp.replace(path)
        known[key] = {
            **shard,
            "env": robot(shard["robot"]).env,
            "steps": int(shard["episodes"] * episode_len),
            "obs_dim": s.obs_dim,
            "act_dim": s.act_dim,
            "file": rel,
            "sha256": sha256(path),
        }
        log(f"westworld data: wrote {rel} ({known[key]['steps']} steps)")
    manifest = {"version": 1, "episode_len": episode_len, "shards": [known[k] for k in sorted(known)]}
    _write_json(root / "manifest.json", manifest)
    return manifest
