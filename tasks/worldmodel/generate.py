"""Reproducible trajectory data for the WestWorld task: simulator rollouts under scripted behaviour policies.

Layout under ``root = <data_dir>/westworld-v1-L<episode_len>/``::

    manifest.json                      {"shards": [{robot, env, policy, split, index, seed, episodes, steps,
                                                     obs_dim, act_dim, file, sha256}, ...]}
    structure/<robot>.json             the robot's `RobotStructure`, parsed once from its MJCF
    <robot>/<policy>_<split>_<k>.npy   float32 (episodes, episode_len, obs_dim + act_dim): row t = [state_t, a_t]

A shard's seed is a hash of (robot, policy, split, k), so a shard does not depend on which other robots are
generated; the env, the policy and numpy's ``.npy`` writer are deterministic, so re-running writes the same bytes
(the manifest's sha256 checks it; a shard whose file is missing or differs is regenerated).

    agents/<robot>/sac@<N>.pt          a trained SAC actor (`zoo_tasks.worldmodel.behaviour`), listed under the
                                       manifest's "agents" with its training settings and sha256

Behaviour policies (``uniform``, ``ou``, ``sac@<N>``) are defined in `zoo_tasks.worldmodel.behaviour`. The agents a
plan's ``sac@<N>`` shards need are trained first; a shard records its agent's sha256, so a re-trained agent (other
settings, or a snapshot file that was lost) regenerates the shards made with it.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import zlib
from pathlib import Path

import numpy as np

from zoo.errors import ConfigError
from zoo_tasks.worldmodel.behaviour import AGENT, DEFAULT_POLICIES, BehaviourPolicy, agent_seed, sac_steps, train_agent
from zoo_tasks.worldmodel.robots import RobotStructure, make_robot_env, parse_structure, robot

SPLITS = ("train", "val", "test")


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


def rollout_shard(
    robot_name: str, policy: str, seed: int, episodes: int, episode_len: int, snapshot: Path | None = None
) -> np.ndarray:
    """(episodes, episode_len, obs_dim + act_dim) float32 rollouts of ``robot_name`` under ``policy`` (a SAC
    policy acts from ``snapshot``, its trained actor)."""
    sac_steps(policy)  # an unknown policy fails before the env is made
    env, handles = make_robot_env(robot_name, seed=seed)
    try:
        model, _ = handles()
        structure = parse_structure(robot_name, model, robot(robot_name).locomotion)
        index = np.asarray(structure.state_index)
        pol = BehaviourPolicy(policy, structure.act_dim, seed, snapshot)
        out = np.zeros((episodes, episode_len, structure.obs_dim + structure.act_dim), dtype=np.float32)
        for e in range(episodes):
            obs, _ = env.reset()
            pol.reset()
            for t in range(episode_len):
                _, data = handles()
                state = np.concatenate([data.qpos, data.qvel])[index]
                action = pol.act(obs)
                out[e, t, : structure.obs_dim] = state
                out[e, t, structure.obs_dim :] = action
                obs, _, terminated, truncated, _ = env.step(action)
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
    # a temporary file per writer: two data modules (a bench's two fits, DDP ranks) may write the same file at once
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
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


def plan(robots, episodes: dict[str, int], episodes_per_shard: int, policies=DEFAULT_POLICIES) -> list[dict]:
    """The shards to generate: per robot, policy and split, ``ceil(episodes[split] / episodes_per_shard)``."""
    bad = sorted(set(episodes) - set(SPLITS))
    if bad:
        raise ConfigError(f"episodes: unknown split(s) {bad}; valid: {', '.join(SPLITS)}")
    if episodes_per_shard < 1:
        raise ConfigError(f"episodes_per_shard must be >= 1, got {episodes_per_shard}")
    for policy in policies:
        sac_steps(policy)
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


def _agents(root: Path, manifest: dict, shards: list[dict], settings: dict, log) -> dict[tuple[str, int], dict]:
    """The manifest entry of every (robot, N) agent snapshot the ``sac@N`` shards need, training the robots whose
    snapshot is missing, differs from its sha256 or was trained with other settings."""
    need: dict[str, set[int]] = {}
    for shard in shards:
        n = sac_steps(shard["policy"])
        if n is not None:
            need.setdefault(shard["robot"], set()).add(n)
    known = {(a["robot"], a["agent_steps"]): a for a in manifest.get("agents", [])}

    def valid(name: str, n: int) -> bool:
        old = known.get((name, n))
        return (
            bool(old)
            and old["settings"] == settings
            and (root / old["file"]).is_file()
            and (sha256(root / old["file"]) == old["sha256"])
        )

    for name in sorted(need):
        missing = sorted(n for n in need[name] if not valid(name, n))
        if not missing:
            continue
        log(f"westworld data: training {name}'s SAC agent to agent step {max(missing)} (snapshots {missing})")
        out = root / "agents" / name
        for n, info in train_agent(name, missing, out, settings).items():
            rel = f"agents/{name}/{info['file']}"
            known[(name, n)] = {
                "robot": name, "env": robot(name).env, "agent_steps": n, "seed": agent_seed(name), "settings": settings,
                "greedy_return": info["greedy_return"], "file": rel, "sha256": sha256(root / rel),
            }  # fmt: skip
            log(f"westworld data: wrote {rel} (greedy return {info['greedy_return']:.1f})")
        manifest["agents"] = [known[k] for k in sorted(known)]
        _write_json(root / "manifest.json", manifest)  # hours of training are never lost to a later failure
    return known


def prepare(root: Path, shards: list[dict], episode_len: int, agent_settings: dict | None = None, log=print) -> dict:
    """Generate every planned shard that is missing, whose file no longer matches its manifest sha256 or whose
    SAC agent changed, training the agents first (``agent_settings``: `SACAgent` arguments, default ``AGENT``);
    write the structures and the manifest. Returns the manifest."""
    manifest = load_manifest(root)
    manifest.setdefault("episode_len", episode_len)
    agents = _agents(root, manifest, shards, dict(AGENT if agent_settings is None else agent_settings), log)
    known = {(s["robot"], s["policy"], s["split"], s["index"]): s for s in manifest["shards"]}
    for shard in shards:
        key = (shard["robot"], shard["policy"], shard["split"], shard["index"])
        rel = f"{shard['robot']}/{shard['policy']}_{shard['split']}_{shard['index']}.npy"
        path = root / rel
        n = sac_steps(shard["policy"])
        agent = agents[(shard["robot"], n)] if n is not None else None
        old = known.get(key)
        if (
            old
            and old["episodes"] == shard["episodes"]
            and old.get("agent_sha256") == (agent and agent["sha256"])
            and path.is_file()
            and sha256(path) == old["sha256"]
        ):
            continue
        s = structure(root, shard["robot"])
        snapshot = root / agent["file"] if agent else None
        data = rollout_shard(shard["robot"], shard["policy"], shard["seed"], shard["episodes"], episode_len, snapshot)
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
        } | ({"agent_sha256": agent["sha256"]} if agent else {})
        log(f"westworld data: wrote {rel} ({known[key]['steps']} steps)")
        manifest["shards"] = [known[k] for k in sorted(known)]
        _write_json(root / "manifest.json", manifest)
    manifest = {
        "version": 1, "episode_len": episode_len, "agents": manifest.get("agents", []),
        "shards": [known[k] for k in sorted(known)],
    }  # fmt: skip
    _write_json(root / "manifest.json", manifest)
    return manifest
