"""Write ``run_<stage>.json`` beside each run's logs: seed, package versions, git commit, machine, wall time, and the
sha256 of each data file when the datamodule reports them (``data_sha256()``, e.g. a user's own dataset)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytorch_lightning as pl

from zoo.runinfo import git_commit, machine, package_versions


def data_sha256(datamodule: object) -> dict[str, str]:
    """``datamodule.data_sha256()`` (file name -> sha256 of each file it read), or {} when it has no such method."""
    method = getattr(datamodule, "data_sha256", None)
    return dict(method()) if callable(method) else {}


class RunMetadata(pl.Callback):
    """Record what is needed to repeat a run. The resolved config is saved next to it by LightningCLI
    (``config.yaml``); this adds what a config does not hold.

    The wall time survives a restart: each checkpoint stores the seconds spent so far, and a resumed fit adds
    them to its own (``prior_s``), so ``wall_time_s`` is the cost of the whole run minus the work lost after its
    last checkpoint. Only fitting resumes: a test that loads a checkpoint (``ckpt_path="best"``) restores this
    callback's state too, and that stored time must not count again, so ``prior_s`` is 0 outside ``fit``.
    """

    def __init__(self, seed: int | None = None) -> None:
        self.seed = seed
        self._start = 0.0
        self.wall_time_s = 0.0
        self.prior_s = 0.0
        self._stage = ""
        self._folder = Path(".")

    def state_dict(self) -> dict[str, float]:
        return {"elapsed_s": self.prior_s + time.perf_counter() - self._start}

    def load_state_dict(self, state_dict: dict[str, float]) -> None:
        # Lightning restores checkpoints after ``setup``, so the stage is known here
        if self._stage == "fit":
            self.prior_s = float(state_dict.get("elapsed_s", 0.0))

    def setup(self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str) -> None:
        self._start = time.perf_counter()
        self._stage = str(getattr(stage, "value", stage))
        self.prior_s = 0.0
        # log_dir broadcasts under DDP, so every rank must ask for it, and early, while the group is alive
        self._folder = Path(trainer.log_dir or trainer.default_root_dir)

    def teardown(self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str) -> None:
        self.wall_time_s = self.prior_s + time.perf_counter() - self._start
        if trainer.is_global_zero:
            folder = self._folder
            folder.mkdir(parents=True, exist_ok=True)
            stage = str(getattr(stage, "value", stage))
            info = {
                "stage": stage,
                "seed": self.seed,
                "wall_time_s": round(self.wall_time_s, 3),
                "wall_time_before_resume_s": round(self.prior_s, 3),
                "global_step": trainer.global_step,
                "epochs": trainer.current_epoch,
                "versions": package_versions(),
                "commit": git_commit(),
                "machine": machine(),
                "metrics": {k: float(v) for k, v in trainer.callback_metrics.items() if v.numel() == 1},
            }
            hashes = data_sha256(trainer.datamodule)
            if hashes:
                info["data_sha256"] = hashes
            (folder / f"run_{stage}.json").write_text(json.dumps(info, indent=1) + "\n")
