"""Helpers shared by test files: ``from zoo_testing import REPO, run_zoo``. (Not ``from conftest import ...``:
several folders have a ``conftest.py`` and whichever pytest imported first would answer.) ``tests/`` is on
``sys.path`` because pytest inserts the root conftest's folder (rootdir-relative ``prepend`` import mode)."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest
import pytorch_lightning as pl
from zoo_forkserver import SWITCH as FORK_SERVER_SWITCH
from zoo_forkserver import ForkServer

from zoo.conformance import fit_parser  # noqa: F401 (the tests import it from here)

REPO = Path(__file__).resolve().parent.parent
TOY_PLUGIN = REPO / "tests" / "fixtures" / "toy_plugin"


def class_parser(cls, part: str = "model", fail_untyped: bool = True):
    """A jsonargparse parser holding ``cls``'s init arguments under ``part``, as LightningCLI reads them (it follows
    ``**kwargs`` passed on to a base class or a network); a bad value raises ``ArgumentError`` instead of exiting."""
    from jsonargparse import ArgumentParser

    parser = ArgumentParser(exit_on_error=False)
    parser.add_class_arguments(cls, part, fail_untyped=fail_untyped)
    return parser


def mirror() -> Path | None:
    """The dataset mirror by the library's own rule (``zoo.data.resolve.data_mirror``), if it exists."""
    from zoo.data.resolve import data_mirror

    found = data_mirror()
    return found.resolve() if found is not None and found.is_dir() else None


def need_dataset(name: str, files=None) -> Path:
    """The folder of dataset ``name`` as ``zoo.data.resolve`` finds it (no download, no hashing); skips the test,
    saying what is missing and what to do, when this machine does not have it. The one data skip of the suite."""
    from zoo.data.resolve import locate

    found = locate(name, files=files)
    if not found.present:
        # reported at the test's location (as a fixture's skip is), not at this line, in `pytest -rs`
        raise pytest.skip.Exception(found.skip_reason(), _use_item_location=True)
    return found.place.root


TIMEOUT_SCALE = "ZOO_TEST_TIMEOUT_SCALE"  # multiplies every hang guard of the suite; 6 when unset


def hang_guard(seconds: float) -> float:
    """The timeout of a subprocess (or a wait) of a test: ``seconds``, a generous bound on an idle machine, times
    ``$ZOO_TEST_TIMEOUT_SCALE`` (default 6). A hang guard, not a time limit: a loaded 2-core machine runs these
    commands several times slower than an idle one (a fixed 300 s failed correct tests there), yet a hang still
    ends. Raise the scale on a slower or busier machine; lower it to find a hang sooner."""
    raw = os.environ.get(TIMEOUT_SCALE, "").strip()
    try:
        scale = float(raw) if raw else 6.0
    except ValueError:
        raise ValueError(f"{TIMEOUT_SCALE}={raw!r}: expected a number, e.g. 6") from None
    if scale <= 0:
        raise ValueError(f"{TIMEOUT_SCALE}={raw!r}: expected a positive number")
    return seconds * scale


_FORK_SERVER = ForkServer()


def run_zoo(
    args: list[str], env: dict[str, str], cwd: Path, timeout: float | None = None
) -> subprocess.CompletedProcess:
    """Run ``python -m zoo.cli.main ARGS`` (what the ``zoo`` script does) as a process of its own and capture its
    output. ``timeout``: the hang guard, ``hang_guard(300)`` unless given. The process is forked from a server that
    has imported torch and Lightning already (``zoo_forkserver``), unless ``$ZOO_TEST_FORK_SERVER`` is ``0``."""
    timeout = hang_guard(300) if timeout is None else timeout
    if os.environ.get(FORK_SERVER_SWITCH, "1") != "0":
        return _FORK_SERVER.run(args, env, cwd, timeout)
    return subprocess.run(
        [sys.executable, "-m", "zoo.cli.main", *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout
    )


def make_record(task: str, method: str, dataset: str, metrics: dict[str, float], seed: int = 0, fold=None, **fields):
    """A `zoo.leaderboard.record.RunRecord` with placeholder provenance, for tests of tables and targets."""
    from zoo.leaderboard.record import RunRecord

    base = dict(config={}, versions={}, wall_time_s=1.0, commit="", machine={})
    return RunRecord(
        task=task, method=method, dataset=dataset, metrics=metrics, seed=seed, fold=fold, **{**base, **fields}
    )


def quiet_trainer(**overrides) -> pl.Trainer:
    """A ``pl.Trainer`` for tests: no logger, progress bar, model summary, checkpointing or sanity validation,
    unless ``overrides`` say otherwise."""
    options = dict(
        logger=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        enable_checkpointing=False,
        num_sanity_val_steps=0,
    )
    return pl.Trainer(**{**options, **overrides})


class Killed(Exception):
    """Raised by :class:`KillAtStep` in place of a SIGKILL."""


class KillAtStep(pl.Callback):
    """Stands in for a SIGKILL: training stops before global step ``step``, with ``last.ckpt`` as the periodic save
    (``zoo.callbacks.PeriodicCheckpoint``) left it."""

    def __init__(self, step: int):
        self.step = step

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        if trainer.global_step == self.step:
            raise Killed


def tiny_trained_run(task: str, case: str, root: Path, steps: int = 2, extra: tuple[str, ...] = ()) -> Path:
    """A ``zoo fit`` run folder (``root/run``: saved config, checkpoints) of conformance case ``case`` of ``task``
    (``TaskSpec.conformance``) trained for ``steps`` steps in this process; skips when its data is not here."""
    from zoo.cli.lightning_cli import ZooCLI
    from zoo.conformance_run import CaseSkipped, case_args, missing_requirement
    from zoo.registry import get_task

    spec = get_task(task)
    found = [c for c in spec.conformance if c.name == case]
    assert found, f"{task} has no conformance case {case!r}: {[c.name for c in spec.conformance]}"
    reason = missing_requirement(found[0])
    if reason:
        pytest.skip(reason)
    keep = ("--trainer.logger=false", "--trainer.enable_checkpointing=false")  # a predictable run folder keeps both
    try:
        args = [a for a in case_args(spec, found[0], root, "run", steps, None) if a not in keep]
    except CaseSkipped as exc:
        pytest.skip(str(exc))
    ZooCLI(args=["fit", *args, *extra])
    return root / "run"


def csv_rows(path: Path) -> list[dict[str, str]]:
    """The rows of a CSV file a command wrote (``zoo predict``'s tables), as dicts of strings."""
    with Path(path).open() as fh:
        return list(csv.DictReader(fh))


def video_frames(path: Path):
    """The frames of a GIF (or MP4) a command wrote, as an (F, H, W, 3) uint8 array."""
    import numpy as np

    path = Path(path)
    if path.suffix == ".mp4":
        import imageio.v2 as imageio

        return np.stack(imageio.mimread(path))
    from PIL import Image

    with Image.open(path) as gif:
        frames = []
        for i in range(gif.n_frames):
            gif.seek(i)
            frames.append(np.asarray(gif.convert("RGB")))
    return np.stack(frames)
