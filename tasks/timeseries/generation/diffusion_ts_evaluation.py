"""Diffusion-TS's test protocol for unconditional generation (Yuan & Qiao, ICLR 2024; Y-debug-sys/Diffusion-TS
``main.py`` and ``Experiments/metric_*.ipynb``) as a LightningModule mixin, used instead of TimeDP's
(:class:`~zoo_tasks.timeseries.generation.evaluation.GenerationEvaluation`) when the test data is a
:class:`~zoo_tasks.timeseries.generation.multivariate_data.MultivariateWindowsDataModule`.

One test step: as many windows as the data has (``trainer.sample(num=len(dataset))``), generated in batches of
``eval_batch``, mapped from [-1, 1] to [0, 1], against every real window in [0, 1]; the discriminative score,
the predictive score and context-FID (:mod:`zoo_tasks.timeseries.generation.diffusion_ts_metrics`) are each
computed ``metric_repeats`` times (the notebooks: 5) with seeds ``1000 * eval_seed + r`` on ``fake[:len(real)]``.
Logged: ``test/disc``, ``test/pred``, ``test/cfid`` (means over the repeats) and ``test/<metric>_std`` (their
sample standard deviations; the notebooks print the 95 % t-interval half-width, ``2.776 * std / sqrt(5)`` for 5).
The record's ``extra["diffusion_ts"]`` holds every repeat; ``samples.png`` shows real and generated windows per
channel.
"""

from __future__ import annotations

import numpy as np
import torch

from zoo.errors import ConfigError
from zoo_tasks.timeseries.generation.diffusion_ts_metrics import context_fid, discriminative_score, predictive_score
from zoo_tasks.timeseries.generation.multivariate_data import MultivariateWindowsDataModule, to_unit

SCORES = {"disc": discriminative_score, "pred": predictive_score, "cfid": context_fid}


def check_metric_settings(repeats: int, iterations: dict[str, int] | None) -> dict[str, int]:
    """``metric_repeats`` (>= 1) and ``metric_iterations`` (keys among ``disc``, ``pred``, ``cfid``, values >= 1;
    absent: the reference's 2,000 / 5,000 / TS2Vec's default) checked; returns the iterations as a dict."""
    if repeats < 1:
        raise ConfigError(f"model.init_args.metric_repeats must be >= 1, got {repeats}")
    iterations = dict(iterations or {})
    unknown = sorted(set(iterations) - set(SCORES))
    if unknown:
        raise ConfigError(f"model.init_args.metric_iterations {unknown}: the keys are {', '.join(SCORES)}")
    bad = {k: v for k, v in iterations.items() if not isinstance(v, int) or v < 1}
    if bad:
        raise ConfigError(f"model.init_args.metric_iterations {bad}: iteration counts must be integers >= 1")
    return iterations


def diffusion_ts_scores(
    real: np.ndarray, fake: np.ndarray, repeats: int = 5, seed: int = 0, iterations: dict[str, int] | None = None
) -> dict[str, list[float]]:
    """Each metric ``repeats`` times (seeds ``seed``, ``seed + 1``, ...) on real (N, L, C) and ``fake[:N]`` windows in
    [0, 1]: ``{"disc": [...], "pred": [...], "cfid": [...]}``. The metrics train networks, so this leaves the
    inference mode Lightning tests under."""
    iterations = check_metric_settings(repeats, iterations)
    fake = fake[: len(real)]
    out: dict[str, list[float]] = {}
    with torch.inference_mode(False):
        for name, score in SCORES.items():
            kwargs = {"iterations": iterations[name]} if name in iterations else {}
            out[name] = [score(real, fake, seed=seed + r, **kwargs) for r in range(repeats)]
    return out


def _spread(values: list[float]) -> float:
    return float(np.std(values, ddof=1)) if len(values) > 1 else 0.0


class DiffusionTSEvaluation:
    """Mixin: the test of Diffusion-TS (Yuan & Qiao, ICLR 2024, arXiv 2403.01742) as ``test_step`` /
    ``on_test_epoch_end`` when the test data is multivariate windows (otherwise every hook defers to the next class,
    TimeDP's protocol).

    Needs ``self.sample_windows(n, group) -> (n, L, C)`` in [-1, 1], ``self.test_routing(windows (k, L, C), group)``,
    ``self.run_folder()`` and hparams ``metric_repeats``, ``metric_iterations``, ``eval_seed``, ``eval_batch``,
    ``plots``; compares them, in [0, 1], with the data's ``unit_windows()`` (N, L, C)."""

    def diffusion_ts_data(self) -> MultivariateWindowsDataModule | None:
        """The trainer's datamodule when it is one this protocol tests, else None."""
        trainer = getattr(self, "_trainer", None)
        dm = getattr(trainer, "datamodule", None) if trainer is not None else None
        return dm if isinstance(dm, MultivariateWindowsDataModule) else None

    def on_test_epoch_start(self) -> None:
        if self.diffusion_ts_data() is None:
            return super().on_test_epoch_start()
        self._scores: dict[str, list[float]] = {}
        self._unit_samples: tuple[np.ndarray, np.ndarray] | None = None

    def test_step(self, batch, batch_idx: int = 0):
        dm = self.diffusion_ts_data()
        if dm is None:
            return super().test_step(batch, batch_idx)
        hp = self.hparams
        real = dm.unit_windows()
        fake = to_unit(self.sample_windows(len(real), dm.name))
        self._scores = diffusion_ts_scores(real, fake, hp.metric_repeats, 1000 * hp.eval_seed, hp.metric_iterations)
        for name, values in self._scores.items():
            self.log(f"test/{name}", float(np.mean(values)), batch_size=1, sync_dist=True)
            self.log(f"test/{name}_std", _spread(values), batch_size=1, sync_dist=True)
        self._unit_samples = (real, fake)
        return self.test_routing(dm.windows[: hp.eval_batch], dm.name)

    def on_test_epoch_end(self) -> None:
        dm = self.diffusion_ts_data()
        if dm is None:
            return super().on_test_epoch_end()
        if self.hparams.plots and self._unit_samples is not None:
            from zoo_tasks.timeseries.generation.plots import sample_grid

            real, fake = self._unit_samples
            mean, std = real.mean(axis=(0, 1)), real.std(axis=(0, 1)) + 1e-7
            rows = np.linspace(0, len(real) - 1, 6).astype(int)  # stride-1 neighbours look alike: spread them
            panels = {
                f"{dm.name} {channel}": ((real[rows, :, c] - mean[c]) / std[c], (fake[:6, :, c] - mean[c]) / std[c])
                for c, channel in enumerate(dm.channels)
            }
            self._figures = {"samples": sample_grid(panels, self.run_folder() / "samples.png")}

    def evaluation_results(self) -> dict:
        scores = getattr(self, "_scores", None)
        if self.diffusion_ts_data() is None or scores is None:
            return super().evaluation_results()
        return {"diffusion_ts": scores, "figures": getattr(self, "_figures", {})}
