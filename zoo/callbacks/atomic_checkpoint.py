"""Checkpoints that are never half-written: saved under a temporary name, then renamed; free space checked first."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytorch_lightning as pl
from pytorch_lightning.callbacks import ModelCheckpoint

from zoo.errors import ZooError

PARTIAL_SUFFIX = ".partial"
_MB = 1 << 20


def atomic_save(trainer: pl.Trainer, path: str | os.PathLike, weights_only: bool = False) -> None:
    """``trainer.save_checkpoint(path)`` through ``path + ".partial"`` and a rename, so a run killed (or out of
    disk) while saving keeps the previous file intact and never leaves a truncated one behind.

    Raises:
        ZooError: the file could not be written (full disk, read-only folder); names the file and the reason.
    """
    path = Path(path)
    partial = path.with_name(path.name + PARTIAL_SUFFIX)
    try:
        trainer.save_checkpoint(partial, weights_only=weights_only)
        if trainer.is_global_zero:
            os.replace(partial, path)
    except OSError as exc:
        partial.unlink(missing_ok=True)
        raise ZooError(
            f"could not write checkpoint {path}: {exc.strerror or exc}; earlier checkpoints are intact"
        ) from None


def checkpoint_bytes(module: pl.LightningModule) -> int:
    """About how large one full checkpoint of ``module`` is: the weights and two optimiser moments (Adam)."""
    weights = sum(t.numel() * t.element_size() for t in module.state_dict().values() if hasattr(t, "numel"))
    return 3 * weights + _MB


def check_free_space(folder: Path, needed: int) -> None:
    """Raise ``ZooError`` naming ``folder`` when it has less than ``needed`` bytes free."""
    folder = Path(folder)
    probe = folder
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    free = shutil.disk_usage(probe).free
    if free < needed:
        raise ZooError(
            f"not enough free disk space for checkpoints in {folder}: {free / _MB:.1f} MB free, about "
            f"{needed / _MB:.1f} MB needed; free some space or choose another --trainer.default_root_dir"
        )


class AtomicModelCheckpoint(ModelCheckpoint):
    """``ModelCheckpoint`` whose files are written atomically (:func:`atomic_save`), which checks, when fitting
    starts, that the folder has room for the files it will hold (``last.ckpt``, the best one, and the temporary
    copy a save needs), instead of finding out after an epoch, and which writes ``last.ckpt`` at the end of every
    training epoch (``save_last=True``).

    Lightning's ``ModelCheckpoint`` (2.x) writes ``last.ckpt`` only in a step where it saved a top-k checkpoint
    too: with a ``monitor``, an epoch that does not improve it leaves ``last.ckpt`` at the last improving epoch,
    and ``--ckpt_path last`` would train the epochs since then again."""

    @property
    def state_key(self) -> str:
        # ModelCheckpoint's key, so checkpoints written before (or after) this subclass restore its state alike
        return super().state_key.replace(type(self).__qualname__, ModelCheckpoint.__qualname__, 1)

    def setup(self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str) -> None:
        super().setup(trainer, pl_module, stage)
        if str(getattr(stage, "value", stage)) == "fit" and self.dirpath and trainer.is_global_zero:
            files = (1 if self.save_last else 0) + max(self.save_top_k, 0) + 1
            check_free_space(Path(self.dirpath), files * checkpoint_bytes(pl_module))

    def on_train_epoch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        super().on_train_epoch_end(trainer, pl_module)
        # The epoch's validation has run by now (Lightning validates before this hook), so the saves Lightning
        # made for it are done; when none of them wrote last.ckpt at this step, write it here.
        if self.save_last and not self._should_skip_saving_checkpoint(trainer):
            self._save_last_checkpoint(trainer, self._monitor_candidates(trainer))

    def _save_checkpoint(self, trainer: pl.Trainer, filepath: str) -> None:
        atomic_save(trainer, filepath, self.save_weights_only)
        self._last_global_step_saved = trainer.global_step
        self._last_checkpoint_saved = filepath
        if trainer.is_global_zero:
            from weakref import proxy

            for logger in trainer.loggers:
                logger.after_save_checkpoint(proxy(self))
