"""The prompt-bootstrap floor: "generate" by returning the prompt windows with a little noise.

Not a model: it tells whether TimeDP's metrics reward more than copying the k examples. Each prompt window is
repeated as TimeDP repeats prompts (:func:`~zoo_tasks.timeseries.generation.evaluation.repeat_prompts`) and
jittered by ``noise`` times the prompts' standard deviation in the normalised space, then mapped back with the
same normaliser as a real generator's samples. It trains nothing (its ``fit`` runs no optimiser step).
"""

from __future__ import annotations

import zlib

import numpy as np
import pytorch_lightning as pl

from zoo.errors import ConfigError
from zoo_tasks.timeseries.generation.evaluation import GenerationEvaluation, repeat_prompts


class PromptBootstrap(GenerationEvaluation, pl.LightningModule):
    """Shapes: ``generate(prompts (k, L), n) -> (n, L)`` = repeated prompts + N(0, (noise * std(prompts))^2)."""

    def __init__(
        self,
        seq_len: int | None = None,
        noise: float = 0.05,
        indomain_prompts: int = 100,
        indomain_samples: int = 1000,
        fewshot_samples: int = 2000,
        eval_seed: int = 0,
        plots: bool = True,
    ):
        super().__init__()
        if noise < 0:
            raise ConfigError(f"model.init_args.noise must be >= 0, got {noise}")
        self.save_hyperparameters()
        self.automatic_optimization = False

    def training_step(self, batch, batch_idx: int):
        return None

    def configure_optimizers(self):
        return None

    def generate(self, prompts: np.ndarray, n: int, group: str = "") -> np.ndarray:
        rng = np.random.default_rng(self.hparams.eval_seed * 7919 + zlib.crc32(group.encode()))
        copies = repeat_prompts(np.asarray(prompts, dtype=np.float64), n)
        return copies + self.hparams.noise * float(np.std(prompts)) * rng.standard_normal(copies.shape)

    def extra_results(self) -> dict:
        return self.evaluation_results()
