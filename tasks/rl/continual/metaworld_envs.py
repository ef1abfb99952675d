"""MetaWorld v3 tasks (Yu et al. 2019, arXiv 1910.10897; Meta-World+ / 3.x, McLean et al. 2025) as the SPHERE
task sequence: the Continual World CW10 order (Wołczyk et al. 2021, arXiv 2105.10919), vectorised with Gymnasium.

Each task is MetaWorld's goal-observable single-task env (``metaworld.ALL_V3_ENVIRONMENTS_GOAL_OBSERVABLE
["<task>-v3-goal-observable"]``, what the SPHERE reference names, ``hammer-v3-goal-observable``, ...): observation
Box (39,) float32 (hand, gripper, two objects, previous frame, goal), action Box (4,) in [-1, 1], 500 steps per
episode (``max_path_length``, a time limit: episodes truncate, they never terminate). Its constructor's ``seed``
fixes the object and goal positions for good (``_freeze_rand_vec``), so every copy of a task gets its own seed:
train copy ``i`` of run seed ``s`` is seeded ``s * 1000 + i``, evaluation copy ``i`` ``s * 1000 + 500 + i`` (the
reference draws them unseeded at construction: fixed per copy, not reproducible). The ScaleMoE wrappers
(``zoo_tasks.rl.gym_envs.GymnasiumEnv``) build an env from a name with no arguments and repeat actions; MetaWorld
needs the seed at construction and no action repeat, so it is built here.

Success is MetaWorld's ``info["success"]`` at an episode's last step, as the reference's evaluation reads it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import gymnasium as gym
import numpy as np

from zoo.errors import ConfigError

CW10 = (
    "hammer",
    "push-wall",
    "faucet-close",
    "push-back",
    "stick-pull",
    "handle-press-side",
    "push",
    "shelf-place",
    "window-close",
    "peg-unplug-side",
)
EVAL_SEED_OFFSET = 500


def env_id(task: str) -> str:
    """``"hammer"`` -> ``"hammer-v3-goal-observable"`` (a full v3 name is accepted as is)."""
    name = task if task.endswith("-v3") else f"{task}-v3"
    return name if name.endswith("-goal-observable") else f"{name}-goal-observable"


def short_name(task: str) -> str:
    return task.removesuffix("-goal-observable").removesuffix("-v3")


def check_tasks(tasks: Sequence[str], key: str = "data.init_args.tasks") -> tuple[str, ...]:
    """The tasks as short names; ConfigError naming the key for an empty list, a repeat or an unknown task."""
    import metaworld

    if isinstance(tasks, str) or not tasks:
        raise ConfigError(f"{key} must be a non-empty list of MetaWorld v3 task names (CW10: {', '.join(CW10)})")
    names = tuple(short_name(t) for t in tasks)
    known = metaworld.ALL_V3_ENVIRONMENTS_GOAL_OBSERVABLE
    unknown = [t for t in names if env_id(t) not in known]
    if unknown:
        valid = sorted(short_name(n) for n in known)
        raise ConfigError(f"{key}: unknown MetaWorld v3 task(s) {unknown}; valid: {', '.join(valid)}")
    repeated = sorted({t for t in names if names.count(t) > 1})
    if repeated:
        raise ConfigError(f"{key}: task(s) {repeated} appear twice; a sequence visits each task once")
    return names


def make_task_env(task: str, seed: int) -> gym.Env:
    """One goal-observable v3 env of ``task`` with its goal fixed by ``seed``, with its 500-step time limit."""
    import metaworld

    env = metaworld.ALL_V3_ENVIRONMENTS_GOAL_OBSERVABLE[env_id(task)](seed=seed)
    return gym.wrappers.TimeLimit(env, env.max_path_length)


def _factory(task: str, seed: int) -> Callable[[], gym.Env]:
    return lambda: make_task_env(task, seed)


def make_vector_env(task: str, num_envs: int, seed: int, evaluation: bool = False, vector: str = "sync"):
    """``num_envs`` copies of ``task`` (each its own goal, see the module docstring) in a Gymnasium vector env
    that resets a finished copy in the same step (``info["final_obs"]``, ``info["final_info"]`` hold the
    finished episode's last observation and info). ``vector``: ``"sync"`` (one process) or ``"async"``."""
    if vector not in ("sync", "async"):
        raise ConfigError(f"vector must be 'sync' or 'async', got {vector!r}")
    base = seed * 1000 + (EVAL_SEED_OFFSET if evaluation else 0)
    fns = [_factory(task, base + i) for i in range(num_envs)]
    cls = gym.vector.SyncVectorEnv if vector == "sync" else gym.vector.AsyncVectorEnv
    envs = cls(fns, autoreset_mode=gym.vector.AutoresetMode.SAME_STEP)
    envs.reset(seed=base)
    return envs


def finished_successes(terminated: np.ndarray, truncated: np.ndarray, info: dict) -> list[tuple[int, bool]]:
    """(copy index, success at its last step) for every copy whose episode ended in this vector step."""
    done = np.logical_or(terminated, truncated)
    if not done.any():
        return []
    final = info["final_info"]
    success = np.asarray(final.get("success", np.zeros(len(done))), dtype=float)
    return [(int(i), bool(success[i] > 0.5)) for i in np.flatnonzero(done)]


def evaluate_success(policy: Callable[[np.ndarray], np.ndarray], envs, episodes: int) -> tuple[float, float]:
    """Mean success and mean return of ``episodes`` episodes of ``policy`` (obs (N, 39) -> actions (N, 4)) on
    the vector env ``envs``, whose copies run their episodes side by side (each copy counts at most
    ``ceil(episodes / N)`` episodes, as SB3's ``evaluate_policy`` spreads them)."""
    n = envs.num_envs
    targets = np.array([(episodes + i) // n for i in range(n)])
    counts, successes, returns = np.zeros(n, dtype=int), [], []
    running = np.zeros(n)
    obs, _ = envs.reset()
    while (counts < targets).any():
        obs, reward, terminated, truncated, info = envs.step(np.clip(policy(obs), -1.0, 1.0))
        running += reward
        for i, success in finished_successes(terminated, truncated, info):
            if counts[i] < targets[i]:
                successes.append(float(success))
                returns.append(float(running[i]))
                counts[i] += 1
            running[i] = 0.0
    return float(np.mean(successes)), float(np.mean(returns))
