"""TimeDP's test protocol as a LightningModule mixin (``utils/test_utils.py``, microsoft/TimeCraft).

A model provides ``generate(prompts (k, L) normalised windows, n, group) -> (n, L)`` normalised samples. The
test loader of :class:`~zoo_tasks.timeseries.generation.data.MultiDomainDataModule` yields one case per step:

- in-domain (``test_model_with_dp``): ``indomain_prompts`` (TimeDP: 100) prompt windows drawn with replacement
  from the domain's training windows, ``indomain_samples`` generated windows (TimeDP: 5,000), mapped back with
  the domain's normaliser, against the domain's held-out windows;
- few-shot (``test_model_unseen``): the k prompt windows of an unseen domain, normalised with a normaliser fitted
  on those k windows alone, ``fewshot_samples`` (TimeDP: 2,000) generated (each prompt repeated, the remainder
  from the first prompts), mapped back, against the 2,000 real test windows.

Both sides are z-scored with the real test windows' statistics; MDD, KL and MMD are logged as
``test/<case>_<metric>`` and averaged over the in-domain cases as ``test/indomain_<metric>`` and over the
few-shot cases (every unseen domain and k) as ``test/fewshot_<metric>``. A model that fine-tunes (TimeMoDE with
``finetune_steps > 0``) also generates each few-shot case after fine-tuning on its k normalised prompt windows,
logged as ``test/<case>_ft_<metric>`` and ``test/finetune_<metric>`` (TimeDP prompts only).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from zoo_tasks.timeseries.generation.metrics import generation_metrics
from zoo_tasks.timeseries.generation.windows import Normalizer

METRICS = ("mdd", "kl", "mmd")
KINDS = ("indomain", "fewshot", "finetune")


def repeat_prompts(prompts: np.ndarray, n: int) -> np.ndarray:
    """TimeDP's ``zero_shot_k_repeat``: each prompt ``n // k`` times in a row, then the first ``n % k`` again."""
    k = len(prompts)
    reps = n // k
    return np.concatenate([np.repeat(prompts, reps, axis=0), prompts[: n - reps * k]])


class GenerationEvaluation:
    """Mixin: ``test_step`` / ``on_test_epoch_end`` of TimeDP's protocol; needs ``self.generate`` and
    hparams ``indomain_prompts``, ``indomain_samples``, ``fewshot_samples``, ``eval_seed``."""

    def on_test_epoch_start(self) -> None:
        self._case_metrics: dict[str, dict[str, float]] = {}
        self._case_samples: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def _case_windows(self, case, index: int):
        """(group name, normalised prompts, inverse normaliser, real windows, z-scoring (mean, std), n)."""
        dm = self.trainer.datamodule
        hp = self.hparams
        rng = np.random.default_rng(hp.eval_seed * 1000 + index)
        if case.kind == "indomain":
            d = dm.domain_names.index(case.name)
            pool = dm.train_windows(d)
            prompts = pool[rng.integers(len(pool), size=hp.indomain_prompts)]
            real = dm.domains[d].heldout
            stats = (real.mean(), real.std())
            return case.name, prompts, dm.domains[d].normalizer.inverse, real, stats, hp.indomain_samples
        fs = dm.fewshot[case.name]
        raw = fs.prompts[case.k]
        normalizer = Normalizer.fit(raw, dm.hparams.normalize)
        group = f"{case.name}_k{case.k}"
        return group, normalizer.transform(raw), normalizer.inverse, fs.test, (fs.mean, fs.std), hp.fewshot_samples

    def test_step(self, index, batch_idx: int = 0):
        case = self.trainer.datamodule.case(int(index))
        group, prompts, inverse, real, (mean, std), n = self._case_windows(case, int(index))
        runs = [(group, case.kind, self.generate)]
        if case.kind == "fewshot" and self.finetunes():
            runs.append((f"{group}_ft", "finetune", self.generate_finetuned))
        for name, kind, generate in runs:
            fake = inverse(generate(prompts, n, name))
            real_z, fake_z = (real - mean) / (std + 1e-7), (fake - mean) / (std + 1e-7)
            values = generation_metrics(real_z, fake_z)
            self._case_metrics[name] = {**values, "kind": kind}
            self._case_samples[name] = (real_z, fake_z)
            for metric, value in values.items():
                self.log(f"test/{name}_{metric}", value, batch_size=1, sync_dist=True)
        return self.test_routing(prompts, group)

    def finetunes(self) -> bool:
        """Whether few-shot cases also run the fine-tuning mode (``generate_finetuned``)."""
        return False

    def generate_finetuned(self, prompts: np.ndarray, n: int, group: str = "") -> np.ndarray:
        raise NotImplementedError

    def test_routing(self, prompts: np.ndarray, group: str) -> dict:
        """What the test step returns for the routing statistics (``{"routing": ...}`` for a mixture)."""
        return {}

    def on_test_epoch_end(self) -> None:
        for kind in KINDS:
            cases = [m for m in self._case_metrics.values() if m["kind"] == kind]
            for name in METRICS:
                if cases:
                    self.log(f"test/{kind}_{name}", float(np.mean([m[name] for m in cases])), sync_dist=True)
        if self.hparams.plots and self._case_samples:
            from zoo_tasks.timeseries.generation.plots import sample_grid

            self._figures = {"samples": sample_grid(self._case_samples, self.run_folder() / "samples.png")}

    def run_folder(self) -> Path:
        trainer = self.trainer
        return Path(trainer.log_dir or trainer.default_root_dir)

    def evaluation_results(self) -> dict:
        cases = getattr(self, "_case_metrics", {})
        return {
            "cases": {g: {k: v for k, v in m.items() if k != "kind"} for g, m in cases.items()},
            "figures": getattr(self, "_figures", {}),
        }
