"""What a trained TimeMoDE / dense twin / TimeVAE / prompt bootstrap generates (``zoo predict``, ``zoo.api.predict``):
windows of a domain the run was trained on, of an unseen domain of its data, or of a new domain given by a few example
series (``--examples``: a CSV or folder the task's own unseen-domain reader reads), in that domain's original units,
with a picture of generated against real windows. An unconditional run (Diffusion-TS's multivariate windows,
``prompted: false``) generates windows of its CSV's channels.

The prompts are built as the task's test protocol builds them (:mod:`zoo_tasks.timeseries.generation.evaluation`):
in-domain, windows drawn with replacement from the domain's normalised training windows, mapped back with its
normaliser; few-shot, the k example windows normalised with a normaliser fitted on those k alone (TimeDP).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from zoo.errors import ConfigError
from zoo.predict import Prediction
from zoo.trained import TrainedRun
from zoo_tasks.timeseries.generation.corpus import read_domain, user_source
from zoo_tasks.timeseries.generation.fewshot import fewshot_set, unseen_windows
from zoo_tasks.timeseries.generation.metrics import generation_metrics
from zoo_tasks.timeseries.generation.multivariate_data import MultivariateWindowsDataModule, to_unit
from zoo_tasks.timeseries.generation.windows import Normalizer

PICTURE_WINDOWS = 6  # real and generated windows drawn per panel


@dataclass
class PromptCase:
    """How one domain is prompted: ``prompts`` (k, L) normalised, ``inverse`` maps normalised windows back to the
    domain's units, ``real`` (m, L) windows of the domain in its units, ``kind`` "in-domain" or "few-shot"."""

    name: str
    kind: str
    prompts: np.ndarray
    inverse: object
    real: np.ndarray


@contextlib.contextmanager
def seeded_sampling(model, datamodule, seed: int):
    """The model samples with ``seed`` (its generators are seeded from ``hparams.eval_seed``) and sees its
    datamodule as it does under a trainer (the diffusion sampler reads from it whether the data is bounded to
    [-1, 1], and clips there); both restored afterwards."""
    eval_seed, trainer = model.hparams.eval_seed, model._trainer
    model.hparams.eval_seed = seed
    if trainer is None:
        model._trainer = SimpleNamespace(datamodule=datamodule)
    try:
        yield
    finally:
        model.hparams.eval_seed = eval_seed
        model._trainer = trainer


def _positive(**values: int | None) -> None:
    for name, value in values.items():
        if value is not None and value < 1:
            raise ConfigError(f"--{name} must be >= 1, got {value}")


def examples_case(dm, examples: str, k: int | None, seed: int) -> PromptCase:
    """A new domain from the series at ``examples`` (a CSV or a folder of CSVs, read as the run's data reads an
    unseen domain given by path), cut into windows of the run's length as its unseen domains are; the prompts are
    every window (``k`` None) or ``k`` of them drawn as TimeDP draws few-shot prompts (``seed`` 0: its draw)."""
    hp = dm.hparams
    name = Path(examples).expanduser().stem
    source, folder = user_source(name, examples, time_column=hp.date_column, id_column=hp.id_column)
    series = read_domain(source, folder)
    windows = unseen_windows(name, series, hp.seq_len)
    if len(windows) == 0:
        raise ConfigError(
            f"--examples {examples}: no gap-free stretch of {hp.seq_len} steps (the run's window length) in its series"
        )
    raw = windows if k is None else fewshot_set(name, series, hp.seq_len, ks=(k,), seed=seed).prompts[k]
    normalizer = Normalizer.fit(raw, hp.normalize)
    return PromptCase(name, "few-shot", normalizer.transform(raw), normalizer.inverse, windows)


def domain_case(run: TrainedRun, dm, domain: str | None, k: int | None, seed: int) -> PromptCase:
    """A domain of the run's data: a pre-training domain (``k`` prompt windows, default the model's
    ``indomain_prompts``, drawn with ``seed`` from its training windows; real: its held-out windows) or an unseen
    one (its few-shot prompts for ``k``, one of the data's ``ks``, default the smallest; real: its test windows)."""
    name = dm.domain_names[0] if domain is None else domain
    if name not in dm.domain_names and name not in dm.unseen_names:
        known = ", ".join([*dm.domain_names, *dm.unseen_names])
        raise ConfigError(f"--domain {name!r} is not a domain of this run ({known}); a new one: --examples PATH")
    if name in dm.unseen_names and k is not None and k not in dm.ks:
        raise ConfigError(f"--k {k}: the few-shot prompts of {name!r} are drawn for k in {list(dm.ks)}")
    dm.setup("test")
    if name in dm.unseen_names:
        fewshot = dm.fewshot[name]
        raw = fewshot.prompts[min(dm.ks) if k is None else k]
        normalizer = Normalizer.fit(raw, dm.hparams.normalize)
        return PromptCase(name, "few-shot", normalizer.transform(raw), normalizer.inverse, fewshot.test)
    d = dm.domain_names.index(name)
    pool = dm.train_windows(d)
    count = run.model.hparams.indomain_prompts if k is None else k
    prompts = pool[np.random.default_rng(seed).integers(len(pool), size=count)]
    return PromptCase(name, "in-domain", prompts, dm.domains[d].normalizer.inverse, dm.domains[d].heldout)


def spread(count: int) -> np.ndarray:
    """Up to ``PICTURE_WINDOWS`` indices spread evenly over ``count`` windows (neighbours look alike: held-out windows
    follow each other in time, and generated windows come in runs of the same prompt)."""
    return np.unique(np.linspace(0, count - 1, min(PICTURE_WINDOWS, count)).astype(int))


def _picture(real: np.ndarray, fake: np.ndarray, prompts: np.ndarray | None, channels: list[str], title: str):
    """``draw(path)``: one panel per channel with a few real (grey) and generated (red) windows, and a panel of the
    prompt windows (blue) when prompted; every panel on the same value axis."""
    panels = len(channels) + (prompts is not None)

    def draw(path: Path) -> None:
        from zoo.utils.figures import pyplot, save_figure

        plt = pyplot()
        cols = min(panels, 4)
        rows = -(-panels // cols)
        fig, axes = plt.subplots(rows, cols, figsize=(3.4 * cols, 2.4 * rows), squeeze=False, sharey=True)
        for ax in axes.flat[panels:]:
            ax.axis("off")
        for ax, (c, channel) in zip(axes.flat, enumerate(channels)):
            for w in real[spread(len(real)), :, c]:
                ax.plot(w, color="0.6", lw=0.8)
            for w in fake[spread(len(fake)), :, c]:
                ax.plot(w, color="tab:red", lw=0.9, alpha=0.85)
            ax.set_title(f"{channel}: real (grey), generated (red)", fontsize=8)
        if prompts is not None:
            ax = axes.flat[len(channels)]
            for w in prompts[spread(len(prompts))]:
                ax.plot(w, color="tab:blue", lw=0.9)
            ax.set_title(f"prompt windows ({len(prompts)})", fontsize=8)
        for ax in axes.flat[:panels]:
            ax.tick_params(labelsize=6)
        fig.suptitle(title, fontsize=9)
        save_figure(fig, path, dpi=110)

    return draw


def _table(samples: np.ndarray, channels: list[str]) -> list[dict]:
    """Rows (sample, step, channel, value) of samples (n, L, C), sample-major."""
    return [
        {"sample": i, "step": t, "channel": channel, "value": float(samples[i, t, c])}
        for i in range(samples.shape[0])
        for t in range(samples.shape[1])
        for c, channel in enumerate(channels)
    ]


def _unconditional(run: TrainedRun, dm, samples: int, seed: int) -> Prediction:
    dm.setup("test")
    with seeded_sampling(run.model, dm, seed):
        fake = dm.scaler.inverse(to_unit(run.model.sample_windows(samples)))
    pick = np.random.default_rng(seed).choice(len(dm.windows), size=min(samples, len(dm.windows)), replace=False)
    real = dm.scaler.inverse(to_unit(dm.windows[np.sort(pick)]))
    title = f"{samples} generated windows of {dm.name} ({len(dm.channels)} channels, unconditional), original units"
    outputs = {"samples": fake, "real": real, "prompts": None, "channels": list(dm.channels), "domain": dm.name}
    return Prediction(
        outputs=outputs,
        tables={"samples": _table(fake, dm.channels)},
        pictures={"samples.png": _picture(real, fake, None, dm.channels, title)},
        summary=[title],
    )


def predict_series(
    run: TrainedRun,
    domain: str | None = None,
    examples: str | None = None,
    k: int | None = None,
    samples: int = 16,
    seed: int = 0,
) -> Prediction:
    """Generated windows (``samples`` of the run's length) of one domain, in its original units.

    domain: a domain of the run's data: a pre-training domain (default: the first), prompted with ``k`` windows
        drawn from its training windows (default: the model's ``indomain_prompts``), or an unseen domain, prompted
        with its few-shot prompts for ``k`` (one of the data's ``ks``; default: the smallest).
    examples: instead, a new domain: a CSV or a folder of CSVs (the format of ``data.init_args.unseen`` paths),
        cut into windows of the run's length; every window is a prompt, or ``k`` of them drawn as TimeDP does.
    seed: the draws (prompt windows, sampling noise); the same seed gives the same windows.
    An unconditional run (multivariate windows) takes neither ``domain``, ``examples`` nor ``k``.

    Returns outputs ``samples`` (n, L, C) and ``real`` (m, L, C) windows in original units, ``prompts`` (k, L) in
    original units (None when unconditional), ``channels``, ``domain``, and ``metrics`` (TimeDP's MDD / KL / MMD of
    the samples against the real windows, z-scored with the real windows' statistics; prompted runs).
    """
    _positive(samples=samples, k=k)
    dm = run.datamodule
    if isinstance(dm, MultivariateWindowsDataModule):
        if domain is not None or examples is not None or k is not None:
            raise ConfigError(
                "this run generates unconditionally (multivariate windows of one CSV): --domain, --examples and "
                "--k do not apply"
            )
        return _unconditional(run, dm, samples, seed)
    if domain is not None and examples is not None:
        raise ConfigError("give --domain (a domain of the run) or --examples (a new domain's series), not both")
    if examples is not None:
        case = examples_case(dm, examples, k, seed)
    else:
        case = domain_case(run, dm, domain, k, seed)
    with seeded_sampling(run.model, dm, seed):
        fake = case.inverse(run.model.generate(case.prompts, samples))[..., None]
    real, prompts = case.real[..., None], case.inverse(case.prompts)
    mean, std = real.mean(), real.std() + 1e-7
    metrics = generation_metrics((real - mean) / std, (fake - mean) / std)
    channels = [case.name]
    title = f"{samples} generated windows of {case.name} ({case.kind}, {len(prompts)} prompt windows), original units"
    summary = [
        title,
        f"against {len(real)} real windows: MDD {metrics['mdd']:.4f}, KL {metrics['kl']:.4f}, MMD {metrics['mmd']:.4f} "
        "(TimeDP's metrics, z-scored with the real windows' statistics; noisy with few samples)",
    ]
    outputs = {
        "samples": fake,
        "real": real,
        "prompts": prompts,
        "channels": channels,
        "domain": case.name,
        "metrics": metrics,
    }
    return Prediction(
        outputs=outputs,
        tables={"samples": _table(fake, channels)},
        pictures={"samples.png": _picture(real, fake, prompts, channels, title)},
        summary=summary,
    )


PREDICTORS = {"TimeMoDE": predict_series, "TimeVAE": predict_series, "PromptBootstrap": predict_series}
