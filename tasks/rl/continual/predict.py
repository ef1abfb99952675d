"""What a trained continual PPO agent (SPHERE, its dense twin) does (``zoo predict``, ``zoo.api.predict``):
evaluation episodes of its mean action on every task of its MetaWorld sequence (or the ones picked), with return and
success per episode, every step's reward and action, and a video of one episode.

An episode is the run's own evaluation protocol (``ContinualPPO.end_stage``): ``greedy_action`` (the actor's mean,
gate in eval mode), clipped to [-1, 1], on an evaluation copy of the task, success being MetaWorld's
``info["success"]`` at the episode's last step. Episode ``k`` of a task runs on evaluation copy ``k`` (its own
fixed goal, env seed ``s * 1000 + 500 + k``, or ``s * 1000 + k`` with ``eval_goals: train``), built as
``metaworld_envs.make_vector_env`` builds it.
"""

from __future__ import annotations

import numpy as np

from zoo.errors import ConfigError
from zoo.predict import Prediction
from zoo.trained import TrainedRun
from zoo_tasks.rl.continual.metaworld_envs import EVAL_SEED_OFFSET, make_task_env, short_name
from zoo_tasks.rl.predict import (
    check_counts,
    frame_stride,
    open_frames,
    run_episode,
    trajectory_rows,
    video_file,
    write_video,
)

CAMERA = "corner"  # MetaWorld's view of the table from a front corner (rendered upside down: flipped)


def _pick_tasks(sequence: tuple[str, ...], tasks: list[str] | None) -> list[str]:
    if tasks is None:
        return list(sequence)
    picked = [short_name(t) for t in tasks]
    unknown = [t for t in picked if t not in sequence]
    if not picked or unknown:
        raise ConfigError(f"--tasks {unknown or '[]'}: pick tasks of the run's sequence: {', '.join(sequence)}")
    return list(dict.fromkeys(picked))  # each task once


def goal_seed(run_seed: int, episode: int, held_out: bool) -> int:
    """Env seed of evaluation copy ``episode`` (``make_vector_env``'s numbering): it fixes the task's goal."""
    return run_seed * 1000 + (EVAL_SEED_OFFSET if held_out else 0) + episode


def _episode_env(task: str, seed: int):
    """A fresh copy of ``task`` seeded as a vector env seeds its copy (``reset(seed=...)``), then reset again (as
    the evaluation resets its copies), and its first observation."""
    env = make_task_env(task, seed)
    env.reset(seed=seed)
    obs, _ = env.reset()
    return env, obs


def predict_tasks(
    run: TrainedRun,
    tasks: list[str] | None = None,
    episodes: int = 3,
    seed: int | None = None,
    video: bool = True,
    max_steps: int | None = None,
) -> Prediction:
    """``episodes`` evaluation episodes of the agent's mean action on each task of its sequence.

    Args:
        tasks: the tasks to evaluate (MetaWorld names of the run's sequence, e.g. [faucet-close]); None: all.
        episodes: episodes per task, episode k on evaluation goal k.
        seed: the run seed the evaluation goals derive from (see the module docstring); None: the run's own
            (``data.init_args.seed``, else its ``seed_everything``), i.e. the goals its evaluation used.
        video: film the first episode of the first task (``episode.mp4`` with imageio-ffmpeg, else ``episode.gif``).
        max_steps: stop each episode after this many steps (None: whole episodes, MetaWorld's 500 steps).
    """
    check_counts(episodes, max_steps)
    model, dm = run.model, run.datamodule
    picked = _pick_tasks(tuple(dm.tasks), tasks)
    if seed is None:
        seed = dm.seed if dm.seed is not None else int(run.config.get("seed_everything") or 0)
    held_out = dm.eval_goals == "held_out"
    policy = lambda obs: np.clip(model.greedy_action(obs[None])[0], -1.0, 1.0)  # noqa: E731
    results, notes, film, filming = {}, [], None, video
    for task in picked:
        results[task] = []
        for k in range(episodes):
            env, obs = _episode_env(task, goal_seed(seed, k, held_out))
            env_fps = env.metadata.get("render_fps", 80)  # MetaWorld: 80 steps per second of simulated time
            frames, stride = None, frame_stride(env_fps)
            if filming:  # the first episode only
                filming = False
                frames, why = open_frames(env.unwrapped.model, env.unwrapped.data, camera=CAMERA, flip=True)
                notes += [why] if why else []
            try:
                episode = run_episode(env, policy, obs, max_steps, frames, stride)
            finally:
                if frames is not None:
                    frames.close()
                env.close()
            if frames is not None:
                film = (task, episode.frames, env_fps / stride)
            results[task].append(episode)

    rows, trajectory = [], []
    for task, done in results.items():
        for k, ep in enumerate(done):
            success = bool(float((ep.info or {}).get("success", 0.0)) > 0.5)
            row = {"task": task, "episode": k, "goal_seed": goal_seed(seed, k, held_out), "return": ep.total}
            rows.append(row | {"success": int(success), "length": len(ep.rewards), "end": ep.end})
        trajectory += trajectory_rows(done, task=task)
    success = {t: float(np.mean([r["success"] for r in rows if r["task"] == t])) for t in picked}
    returns = {t: float(np.mean([r["return"] for r in rows if r["task"] == t])) for t in picked}
    pictures = {}
    if film is not None:
        task, shots, fps = film
        pictures[video_file("episode")] = lambda path: write_video(shots, path, fps)
        notes.append(f"video of {task} episode 0: {len(shots)} frames at {fps:g} fps")
    summary = [
        f"{episodes} episodes on each of {len(picked)} tasks (goals of seed {seed}), mean action: "
        f"mean success {np.mean(list(success.values())):.3f}",
        *(f"{t}: success {success[t]:.3f}, return {returns[t]:.1f}" for t in picked),
        *notes,
    ]
    outputs = {
        "tasks": picked,
        "success": np.array([[r["success"] for r in rows if r["task"] == t] for t in picked], dtype=float),
        "returns": np.array([[r["return"] for r in rows if r["task"] == t] for t in picked]),
        "rewards": {t: [ep.rewards for ep in results[t]] for t in picked},
        "actions": {t: [ep.actions for ep in results[t]] for t in picked},
        "frames": film[1] if film is not None else None,
    }
    tables = {"episodes": rows, "trajectory": trajectory}
    return Prediction(outputs=outputs, tables=tables, pictures=pictures, summary=summary)


PREDICTORS = {"ContinualPPO": predict_tasks}
