"""What a trained SAC agent (ScaleMoE, SimBa, MLP) does (``zoo predict``, ``zoo.api.predict``): evaluation episodes
of its deterministic policy on the run's environment, with every step's reward and action, and a video of the first
episode rendered from the environment's MuJoCo physics.

The rendering helpers here (``MujocoFrames``, ``video_file``, ``write_video``) serve the continual-RL predictor too.
Frames are drawn off-screen by MuJoCo (through Gymnasium's renderer) with ``MUJOCO_GL=egl`` unless the process set
another backend; a machine that cannot render gets the episodes without the video, and a line saying why.
"""

from __future__ import annotations

import importlib.util
import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

os.environ.setdefault("MUJOCO_GL", "egl")  # headless rendering; read when a renderer is created, not at import

import numpy as np  # noqa: E402

from zoo.errors import ConfigError  # noqa: E402
from zoo.predict import Prediction  # noqa: E402
from zoo.trained import TrainedRun  # noqa: E402

FRAME_SIZE = (120, 160)  # (height, width) of the video's frames
VIDEO_FPS = 25  # at most; frames are taken every ceil(env fps / VIDEO_FPS) steps, so the video plays in real time


@dataclass
class Episode:
    """One episode: ``rewards`` (T,), ``actions`` (T, A) as the agent chose them (in [-1, 1]), ``end``: why it
    stopped ("terminated", "time limit" or "max_steps"), and ``frames`` (F, H, W, 3) uint8 when it was filmed."""

    rewards: np.ndarray
    actions: np.ndarray
    end: str
    frames: np.ndarray | None = None
    info: dict | None = None  # the environment's info of the last step

    @property
    def total(self) -> float:
        return float(self.rewards.sum())


class MujocoFrames:
    """Off-screen RGB frames (H, W, 3) uint8 of a MuJoCo ``model``/``data`` pair (``mujoco.MjModel``/``MjData``)
    from ``camera`` (a camera name or id; -1: the free camera), through Gymnasium's ``MujocoRenderer``.
    ``flip``: upside-down cameras (MetaWorld's corner cameras). Shadows and reflections are off (a CPU renderer
    spends most of its time on them)."""

    def __init__(self, model, data, camera: str | int = -1, size: tuple[int, int] = FRAME_SIZE, flip: bool = False):
        import mujoco
        from gymnasium.envs.mujoco.mujoco_rendering import MujocoRenderer

        camera_arg = {"camera_name": camera} if isinstance(camera, str) else {"camera_id": camera}
        self.flip = flip
        self._renderer = MujocoRenderer(model, data, width=size[1], height=size[0], **camera_arg)
        self._viewer = self._renderer._get_viewer("rgb_array")
        for flag in (mujoco.mjtRndFlag.mjRND_SHADOW, mujoco.mjtRndFlag.mjRND_REFLECTION):
            self._viewer.scn.flags[flag] = 0

    def __call__(self) -> np.ndarray:
        self._viewer.make_context_current()  # another GL context may have been made current since the last frame
        frame = self._renderer.render("rgb_array")
        return np.ascontiguousarray(frame[::-1] if self.flip else frame)

    def close(self) -> None:
        self._renderer.close()


def open_frames(model, data, camera: str | int = -1, flip: bool = False) -> tuple[MujocoFrames | None, str]:
    """``(MujocoFrames(model, data, camera, flip=flip), "")``, or ``(None, why)`` when this machine cannot render
    (no EGL / OSMesa / display)."""
    try:
        return MujocoFrames(model, data, camera=camera, flip=flip), ""
    except Exception as exc:  # noqa: BLE001 - any GL failure means no video, never a failed prediction
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return None, f"no video: MuJoCo cannot render here (MUJOCO_GL={os.environ.get('MUJOCO_GL')}: {reason})"


def frame_stride(env_fps: float) -> int:
    """Film every this many steps so that the video has at most ``VIDEO_FPS`` frames per second of env time."""
    return max(1, math.ceil(env_fps / VIDEO_FPS - 1e-9))


def video_file(stem: str) -> str:
    """``stem.mp4`` when imageio-ffmpeg is installed (``write_video`` can encode MP4), else ``stem.gif``."""
    return f"{stem}.mp4" if importlib.util.find_spec("imageio_ffmpeg") else f"{stem}.gif"


def write_video(frames: np.ndarray, path: Path, fps: float) -> None:
    """Frames (F, H, W, 3) uint8 as an MP4 (imageio-ffmpeg) or a looping GIF (Pillow), by ``path``'s suffix."""
    path = Path(path)
    if path.suffix == ".mp4":
        import imageio.v2 as imageio

        imageio.mimwrite(path, list(frames), fps=fps, macro_block_size=8)
        return
    from PIL import Image

    images = [Image.fromarray(f) for f in frames]
    duration = max(20, round(1000 / fps))  # ms; browsers slow GIF frames shorter than 20 ms down to 100 ms
    images[0].save(path, save_all=True, append_images=images[1:], duration=duration, loop=0)


def run_episode(
    env,
    policy: Callable[[np.ndarray], np.ndarray],
    obs: np.ndarray,
    max_steps: int | None,
    frames: MujocoFrames | None = None,
    stride: int = 1,
) -> Episode:
    """Steps ``env`` (the gymnasium API) from observation ``obs`` with ``policy`` (obs -> action) until the episode
    ends or ``max_steps`` steps; films every ``stride``-th state (the first one included) when ``frames`` is given."""
    rewards, actions, shots, info, end = [], [], [], {}, "max_steps"
    if frames is not None:
        shots.append(frames())
    while max_steps is None or len(rewards) < max_steps:
        action = policy(obs)
        obs, reward, terminated, truncated, info = env.step(action)
        rewards.append(float(reward))
        actions.append(np.asarray(action, dtype=np.float32).reshape(-1))
        if frames is not None and len(rewards) % stride == 0:
            shots.append(frames())
        if terminated or truncated:
            end = "terminated" if terminated else "time limit"
            break
    return Episode(
        rewards=np.asarray(rewards, dtype=np.float64),
        actions=np.stack(actions) if actions else np.zeros((0, 0), np.float32),
        end=end,
        frames=np.stack(shots) if shots else None,
        info=info,
    )


def check_counts(episodes: int, max_steps: int | None) -> None:
    """ConfigError unless ``episodes >= 1`` and ``max_steps`` is None or >= 1."""
    if episodes < 1:
        raise ConfigError(f"--episodes must be >= 1, got {episodes}")
    if max_steps is not None and max_steps < 1:
        raise ConfigError(f"--max_steps must be >= 1 (or left out: whole episodes), got {max_steps}")


def trajectory_rows(episodes: list[Episode], **keys) -> list[dict]:
    """One row per step: ``keys``, episode, step, reward and the action's dims ``action_0 ..``."""
    rows = []
    for e, episode in enumerate(episodes):
        for t, (reward, action) in enumerate(zip(episode.rewards, episode.actions)):
            actions = {f"action_{i}": float(a) for i, a in enumerate(action)}
            rows.append({**keys, "episode": e, "step": t, "reward": float(reward), **actions})
    return rows


def _mujoco_state(env):
    """The (MjModel, MjData, camera) to film a ``DMControlEnv`` or a Gymnasium MuJoCo env with; None for others."""
    inner = getattr(env, "_env", None)
    physics = getattr(inner, "physics", None)
    if physics is not None:  # dm_control: its first camera (the suite's tracking / overview camera)
        model, data = physics.model.ptr, physics.data.ptr
        return model, data, 0 if model.ncam else -1
    unwrapped = getattr(inner, "unwrapped", None)
    model, data = getattr(unwrapped, "model", None), getattr(unwrapped, "data", None)
    if model is not None and type(model).__name__ == "MjModel":
        return model, data, -1
    return None


def _env_fps(env) -> float:
    """Agent steps per second of env time (a DMC task's control step times the action repeat; else 25)."""
    inner = getattr(env, "_env", None)
    if hasattr(inner, "control_timestep"):
        return 1.0 / (inner.control_timestep() * env.action_repeat)
    dt = getattr(getattr(inner, "unwrapped", None), "dt", None)
    return 1.0 / (dt * env.action_repeat) if dt else float(VIDEO_FPS)


def predict_episodes(
    run: TrainedRun, episodes: int = 3, seed: int = 0, video: bool = True, max_steps: int | None = None
) -> Prediction:
    """``episodes`` evaluation episodes of the agent's deterministic policy (``tanh`` of the actor's mean, the
    action its evaluation takes: ``SACAgent.act(obs, deterministic=True)``) on the run's environment.

    Args:
        episodes: how many episodes.
        seed: the environment's seed (a fresh env, its episodes one after the other: the same episodes for a seed).
        video: film the first episode (``policy.mp4`` with imageio-ffmpeg, else ``policy.gif``; 120 x 160 frames).
        max_steps: stop each episode after this many agent steps (None: whole episodes, 500 steps for DMC at
            action repeat 2).
    """
    check_counts(episodes, max_steps)
    model, dm = run.model, run.datamodule
    env = dm.make_env(seed)
    policy = lambda obs: model.act(obs, deterministic=True)  # noqa: E731
    fps = _env_fps(env)
    done, notes = [], []
    for e in range(episodes):
        obs, _ = env.reset()
        frames = None
        if e == 0 and video:
            state = _mujoco_state(env)
            frames, why = open_frames(*state) if state else (None, f"no video: {dm.env} is not a MuJoCo env")
            notes += [why] if why else []
        try:
            done.append(run_episode(env, policy, obs, max_steps, frames, frame_stride(fps)))
        finally:
            if frames is not None:
                frames.close()
    returns = np.array([ep.total for ep in done])
    lengths = np.array([len(ep.rewards) for ep in done])
    first = done[0].frames
    rows = [{"episode": e, "return": ep.total, "length": len(ep.rewards), "end": ep.end} for e, ep in enumerate(done)]
    pictures, video_fps = {}, fps / frame_stride(fps)
    if first is not None:
        pictures[video_file("policy")] = lambda path: write_video(first, path, video_fps)
        notes.append(f"video of episode 0: {len(first)} frames at {video_fps:g} fps")
    summary = [
        f"{episodes} episodes of {dm.env} (env seed {seed}), deterministic policy: return {returns.mean():.1f} "
        f"(std {returns.std():.1f}, min {returns.min():.1f}, max {returns.max():.1f}), {lengths.sum()} steps",
        *notes,
    ]
    outputs = {
        "returns": returns,
        "lengths": lengths,
        "rewards": [ep.rewards for ep in done],
        "actions": [ep.actions for ep in done],
        "frames": first,
    }
    tables = {"episodes": rows, "trajectory": trajectory_rows(done)}
    return Prediction(outputs=outputs, tables=tables, pictures=pictures, summary=summary)


PREDICTORS = {"SACAgent": predict_episodes}
