"""What a trained WestWorld world model (or one of its baselines) predicts (``zoo predict``, ``zoo.api.predict``):
open-loop rollouts from test-set starts, i.e. from the first ``prefix`` observed steps of a test episode of each
evaluation robot, under the episode's recorded actions, ``horizon`` steps ahead, beside the true trajectory.

Values are in the model's normalised space (each robot's dims standardised by its own statistics, as the task's
MAE / MSE are computed), and only the observation dims that vary in the data are written (the metric's dims).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from zoo.errors import ConfigError
from zoo.predict import Prediction
from zoo.trained import TrainedRun


def start_episodes(available: int, starts: int) -> np.ndarray:
    """``min(starts, available)`` test episodes spread evenly over the ``available`` ones (the split holds each
    behaviour policy's episodes in turn, so the starts cover the policies); their indices, ascending."""
    return np.unique(np.linspace(0, available - 1, min(starts, available)).round().astype(int))


def _check(starts: int, horizon: int, prefix: int, episode_len: int, max_len: int | None) -> None:
    if starts < 1:
        raise ConfigError(f"--starts must be >= 1 (test episodes per robot to roll out from), got {starts}")
    longest = episode_len - prefix if max_len is None else min(episode_len, max_len) - prefix
    if not 1 <= horizon <= longest:
        raise ConfigError(f"--horizon must be in 1..{longest} (episodes of {episode_len} steps, prefix {prefix})")


def _rollout_picture(true: np.ndarray, pred: np.ndarray, valid: np.ndarray, prefix: int, title: str):
    """``draw(path)``: the first varying dims, predicted vs true, of one window (``plots.rollout_figure``)."""

    def draw(path: Path) -> None:
        from zoo_tasks.worldmodel.plots import rollout_figure

        rollout_figure(true, pred, valid, prefix, title, path)

    return draw


def predict_rollouts(run: TrainedRun, starts: int = 4, horizon: int | None = None) -> Prediction:
    """Open-loop rollouts of ``horizon`` steps after the model's prefix, from ``starts`` test episodes of each
    evaluation robot (``data.init_args.eval_robots``), and the true states they should match.

    Args:
        starts: test episodes per robot to roll out from (at most: all of them), spread evenly over its test split.
        horizon: steps predicted after the prefix (None: the data's ``horizon``, the length the model was
            evaluated on); at most ``episode_len - prefix`` (and the network's time embedding).
    """
    model, dm = run.model, run.datamodule
    dm.setup("test")
    prefix = int(model.hparams.prefix)
    horizon = int(dm.hparams.horizon) if horizon is None else horizon
    net = getattr(model, "net", None)
    max_len = net.time.num_embeddings if net is not None else None
    outputs = {k: {} for k in ("starts", "predicted", "true", "valid", "mae")}
    rows, pictures, summary = [], {}, []
    for data in dm.test_data:
        episodes = data.episodes  # (E, L, Do + Da), normalised
        _check(starts, horizon, prefix, episodes.shape[1], max_len)
        picked = start_episodes(episodes.shape[0], starts)
        batch = data.batch(episodes[picked, : prefix + horizon].copy())
        do = batch["obs_dim"]
        pred = model.predict_future(batch)[0].float().numpy()  # (S, horizon, Do)
        true = batch["x"][:, prefix:, :do].numpy()
        valid = batch["obs_valid"].numpy()
        dims = np.flatnonzero(valid)
        mae = float(np.abs(pred - true)[..., dims].mean()) if dims.size else float("nan")
        for s, episode in enumerate(picked):
            for t in range(horizon):
                for d in dims:
                    rows.append(
                        {
                            "robot": data.name,
                            "start": int(episode),
                            "step": prefix + t,
                            "dim": int(d),
                            "predicted": float(pred[s, t, d]),
                            "true": float(true[s, t, d]),
                        }
                    )
        name = data.name
        outputs["starts"][name], outputs["predicted"][name], outputs["true"][name] = picked, pred, true
        outputs["valid"][name], outputs["mae"][name] = valid, mae
        window = batch["x"][0, :, :do].numpy()
        title = f"{name}, test episode {picked[0]}"
        pictures[f"rollout_{name}.png"] = _rollout_picture(window, pred[0], valid, prefix, title)
        summary.append(f"{name}: {len(picked)} rollouts of {horizon} steps after {prefix}, MAE {mae:.4f} (normalised)")
    outputs["robots"] = [data.name for data in dm.test_data]
    return Prediction(outputs=outputs, tables={"rollouts": rows}, pictures=pictures, summary=summary)


PREDICTORS = {"WorldModel": predict_rollouts}
