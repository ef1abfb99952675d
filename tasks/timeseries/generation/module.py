"""TimeMoDE and its dense twin: a prompt-conditioned diffusion transformer pre-trained on many domains.

TimeMoDE (ICML 2026; no public code): a DiT whose FFNs are a Mixture of Experts routed on the token, the domain
prompt and the diffusion-timestep embedding; ``moe=False`` is the dense twin (same prompts, FFNs of equal active
width: TimeDP's setting, Huang et al. AAAI 2025, arXiv 2501.05403), ``router_prompt=False`` /
``router_timestep=False`` the two router ablations. Training follows TimeDP's config
(``configs/multi_domain_timedp.yaml``): eps-prediction, L1 loss, 200 steps of the linear schedule 5e-4 .. 0.1,
the prompt computed from the training window itself, prototypes dropped for the null vector with probability
0.5, AdamW at 1e-3 with 1,000 linear warm-up steps; sampling is ancestral DDPM with x_0 clipped to [-1, 1]
(the centred-PIT range), on all 200 steps or ``sample_steps`` respaced ones. Test: TimeDP's in-domain and
few-shot protocol (:mod:`zoo_tasks.timeseries.generation.evaluation`).

``prompted=False`` with ``channels`` = C is the unconditional multivariate generator of Diffusion-TS's protocol
(Yuan & Qiao, ICLR 2024): no prompt encoder, no prototypes, router on token + timestep; trained on
:class:`~zoo_tasks.timeseries.generation.multivariate_data.MultivariateWindowsDataModule` and tested by
:mod:`zoo_tasks.timeseries.generation.diffusion_ts_evaluation` (discriminative, predictive, context-FID).

Batches: ``(x (B, L, C), domain (B,))``. Steps return ``{"loss", "routing": {"net.blocks.<i>.ffn": Routing}}``.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import torch
from torch import Tensor

from zoo.errors import ConfigError
from zoo.moe import Routing
from zoo.task_module import MoETaskModule, StepLoss
from zoo.utils.signature import signature_defaults
from zoo_tasks.timeseries.generation.diagnostics import ExpertLoad
from zoo_tasks.timeseries.generation.diffusion import GaussianDiffusion
from zoo_tasks.timeseries.generation.diffusion_ts_evaluation import DiffusionTSEvaluation, check_metric_settings
from zoo_tasks.timeseries.generation.dit import DiTDenoiser, check_shapes
from zoo_tasks.timeseries.generation.evaluation import GenerationEvaluation, repeat_prompts
from zoo_tasks.timeseries.generation.prompts import DomainPrompter

LOSSES = ("l1", "l2")


class TimeMoDE(DiffusionTSEvaluation, GenerationEvaluation, MoETaskModule):
    """Prompt-conditioned DiT diffusion generator (TimeMoDE with ``moe=True``, the dense twin with ``moe=False``);
    unconditional with ``prompted=False``. The network's arguments (:class:`DiTDenoiser`'s: window shape, sizes,
    mixture, prompt pool) are this model's own: it takes them as ``**network`` and passes them on in one call.

    Shapes: ``loss_and_routing((x (B, L, C), domain (B,))) -> (loss (), {layer: Routing})``;
    ``generate(prompts (k, L) normalised, n) -> (n, L)`` normalised windows (prompted, C = 1);
    ``sample_windows(n) -> (n, L, C)`` windows in the data's scale (unconditional).
    """

    checkpoint_monitor = "val/loss"
    checkpoint_mode = "min"
    progress_bar = ("train/loss", "val/loss")
    synced_stages = ("val",)
    optimizer_class = torch.optim.AdamW
    optimizer_hparams = ("lr",)

    def __init__(
        self,
        prompt_dim: int = 32,
        cond_drop_prob: float = 0.5,
        timesteps: int = 200,
        schedule: str = "linear",
        linear_start: float = 5e-4,
        linear_end: float = 0.1,
        loss: str = "l1",
        lr: float = 1e-3,
        warmup_steps: int = 1000,
        clip_denoised: bool = True,
        sample_steps: int | None = None,
        indomain_prompts: int = 100,
        indomain_samples: int = 1000,
        fewshot_samples: int = 2000,
        eval_batch: int = 1000,
        eval_seed: int = 0,
        timestep_bands: int = 4,
        plots: bool = True,
        finetune_steps: int = 0,
        finetune_lr: float = 1e-4,
        metric_repeats: int = 5,
        metric_iterations: dict[str, int] | None = None,
        **network,
    ):
        super().__init__()
        network = {**signature_defaults(DiTDenoiser), **network}  # saved whole, as a config would give it
        # read into names: jsonargparse follows ``network`` only into the ``DiTDenoiser(**network)`` call
        seq_len, channels, moe, prompted = network["seq_len"], network["channels"], network["moe"], network["prompted"]
        num_latents, latent_dim, num_experts = network["num_latents"], network["latent_dim"], network["num_experts"]
        check_shapes(seq_len, channels)  # before the prompter, which needs them
        check_metric_settings(metric_repeats, metric_iterations)
        if loss not in LOSSES:
            raise ConfigError(f"model.init_args.loss {loss!r}; choose one of {', '.join(LOSSES)}")
        if finetune_steps < 0:
            raise ConfigError(f"model.init_args.finetune_steps must be >= 0, got {finetune_steps}")
        if not 0 <= cond_drop_prob < 1:
            raise ConfigError(f"model.init_args.cond_drop_prob must be in [0, 1), got {cond_drop_prob}")
        given = network["aux_weights"]
        aux_weights = network["aux_weights"] = {"load_balance": 0.01} if given is None else {**given}
        self.save_hyperparameters()
        self.aux_weights = aux_weights if moe else {}
        self.prompter = DomainPrompter(seq_len, channels, prompt_dim, num_latents, latent_dim) if prompted else None
        self.net = DiTDenoiser(**network)
        self.diffusion = GaussianDiffusion(timesteps, schedule, linear_start, linear_end)
        self.expert_load = ExpertLoad(num_experts, timesteps, timestep_bands) if moe else None

    def setup(self, stage: str) -> None:
        """Refuse, before any training, a model its data's test protocol cannot evaluate."""
        dm = getattr(self.trainer, "datamodule", None)
        if dm is None:
            return
        if self.diffusion_ts_data() is not None:
            if self.prompter is not None:
                raise ConfigError(
                    f"{type(dm).__name__} is tested with Diffusion-TS's unconditional protocol: set "
                    "model.init_args.prompted false"
                )
        elif self.prompter is None or self.hparams.channels != 1:
            raise ConfigError(
                f"{type(dm).__name__} is tested with TimeDP's prompted univariate protocol: set "
                "model.init_args.prompted true and channels 1"
            )

    # ---- training ----------------------------------------------------------------------------------------
    def step_loss(self, batch, generator: torch.Generator | None = None) -> StepLoss:
        """The diffusion loss (+ the mixtures' aux losses) of a batch at random timesteps and noise (drawn from
        ``generator`` when given: validation uses a fixed one per batch, so ``val/loss`` compares checkpoints on the
        same draws); logs the loss and the diffusion loss alone."""
        x = batch[0]
        prompt, latents = (self.prompter(x), self.prompter.latents) if self.prompter is not None else (None, None)
        t = torch.randint(0, self.diffusion.timesteps, (x.shape[0],), device=x.device, generator=generator)
        noise = torch.randn(x.shape, device=x.device, generator=generator)
        drop = self.hparams.cond_drop_prob if self.training else 0.0
        eps, routings = self.net(self.diffusion.q_sample(x, t, noise), t, prompt, latents, drop)
        diff = eps - noise
        diffusion = diff.abs().mean() if self.hparams.loss == "l1" else diff.square().mean()
        loss = self.with_aux_loss(diffusion, routings)
        named = {f"net.{name}": r for name, r in routings.items()}
        return StepLoss(loss, named, {"loss": loss, "diffusion_loss": diffusion.detach()}, len(x))

    def loss_and_routing(self, batch, generator: torch.Generator | None = None) -> tuple[Tensor, dict[str, Routing]]:
        """(loss, routings) of :meth:`step_loss`, its noise drawn from ``generator`` when given."""
        step = self.step_loss(batch, generator)
        return step.loss, step.routing

    def validation_step(self, batch, batch_idx: int, dataloader_idx: int = 0) -> dict:
        """The training loss on draws seeded by the batch index (``val/loss``: the diffusion loss alone), returned
        with the routings (the test protocol is :class:`GenerationEvaluation`'s or :class:`DiffusionTSEvaluation`'s
        ``test_step``)."""
        step = self.step_loss(batch, torch.Generator(device=batch[0].device).manual_seed(batch_idx))
        self.log_metrics("val", {"loss": step.logs["diffusion_loss"]}, step.batch_size)
        return {"loss": step.loss, "routing": step.routing}

    def lr_schedule(self, optimizer: torch.optim.Optimizer) -> dict:
        """Linear warm-up over ``warmup_steps`` optimiser steps (TimeDP's)."""
        warmup = max(1, self.hparams.warmup_steps)
        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: min(1.0, 1e-6 + step / warmup))
        return {"scheduler": scheduler, "interval": "step"}

    # ---- generation --------------------------------------------------------------------------------------
    def _clip(self) -> float | None:
        trainer = getattr(self, "_trainer", None)
        dm = getattr(trainer, "datamodule", None) if trainer is not None else None
        bounded = getattr(dm, "bounded", None)
        if bounded is None:  # TimeDP's data: bounded when centred-PIT normalised
            bounded = dm is None or getattr(dm, "hparams", {}).get("normalize", "centered_pit") == "centered_pit"
        return 1.0 if self.hparams.clip_denoised and bounded else None

    def _windows(self, windows: np.ndarray) -> Tensor:
        """Windows (k, L) or (k, L, C) as a float32 (k, L, C) tensor on the model's device."""
        x = torch.as_tensor(np.asarray(windows), dtype=torch.float32, device=self.device)
        return x.unsqueeze(-1) if x.ndim == 2 else x

    @contextmanager
    def _eval_mode(self) -> Iterator[None]:
        was_training = self.training
        self.eval()
        try:
            yield
        finally:
            self.train(was_training)

    @torch.no_grad()
    def _sample(self, n: int, prompt: Tensor | None, group: str) -> np.ndarray:
        """(n, L, C) windows, ``eval_batch`` at a time, row i conditioned on ``prompt[i]`` (None: unconditional);
        the noise is seeded by ``eval_seed`` and ``group``, and the routing is counted under ``group``."""
        generator = torch.Generator(device=self.device).manual_seed(
            self.hparams.eval_seed * 7919 + zlib.crc32(group.encode())
        )
        latents = self.prompter.latents if self.prompter is not None else None
        out = []
        for start in range(0, n, self.hparams.eval_batch):
            size = min(self.hparams.eval_batch, n - start)
            chunk = prompt[start : start + size] if prompt is not None else None

            def eps_fn(xt: Tensor, t: Tensor, chunk=chunk) -> Tensor:
                eps, routings = self.net(xt, t, chunk, latents)
                if self.expert_load is not None and group:
                    self.expert_load.add(group, int(t[0]), routings)
                return eps

            shape = (size, self.hparams.seq_len, self.hparams.channels)
            steps = self.hparams.sample_steps
            out.append(self.diffusion.sample(eps_fn, shape, self._clip(), generator, self.device, steps))
        return torch.cat(out).cpu().numpy().astype(np.float64)

    def generate(self, prompts: np.ndarray, n: int, group: str = "") -> np.ndarray:
        """(n, L) normalised windows generated with each of the k prompt windows (k, L) repeated (TimeDP)."""
        if self.prompter is None:
            raise ConfigError("TimeDP's protocol prompts the generator: this model has model.init_args.prompted false")
        with self._eval_mode(), torch.no_grad():
            prompt = self.prompter(self._windows(prompts)).cpu().numpy()
            prompt = torch.as_tensor(repeat_prompts(prompt, n), device=self.device)
            return self._sample(n, prompt, group).squeeze(-1)

    def sample_windows(self, n: int, group: str = "") -> np.ndarray:
        """(n, L, C) windows generated unconditionally, in the data's [-1, 1] scale (Diffusion-TS's protocol)."""
        if self.prompter is not None:
            raise ConfigError(
                "Diffusion-TS's protocol generates unconditionally: set model.init_args.prompted false for this data"
            )
        with self._eval_mode():
            return self._sample(n, None, group)

    def finetunes(self) -> bool:
        return self.hparams.finetune_steps > 0

    def generate_finetuned(self, prompts: np.ndarray, n: int, group: str = "") -> np.ndarray:
        """The second few-shot mode: ``finetune_steps`` AdamW steps of the diffusion loss on the k prompt windows
        (a full batch of them, seeded draws), then :meth:`generate` with the same prompts; every parameter and
        buffer is restored afterwards, so the next case starts from the pre-trained model."""
        saved = {k: v.detach().clone() for k, v in self.state_dict().items()}
        was_training = self.training
        try:
            with torch.inference_mode(False), torch.enable_grad():
                x = self._windows(prompts)
                optimizer = torch.optim.AdamW(self.parameters(), lr=self.hparams.finetune_lr)
                generator = torch.Generator(device=self.device).manual_seed(self.hparams.eval_seed)
                self.train()
                for _ in range(self.hparams.finetune_steps):
                    loss, _ = self.loss_and_routing((x.clone(),), generator)
                    optimizer.zero_grad(set_to_none=True)
                    loss.backward()
                    optimizer.step()
            return self.generate(prompts, n, group)
        finally:
            with torch.inference_mode(False), torch.no_grad():
                self.load_state_dict(saved)
            self.zero_grad(set_to_none=True)
            self.train(was_training)

    def test_routing(self, prompts: np.ndarray, group: str) -> dict:
        if not self.hparams.moe:
            return {}
        x = self._windows(prompts)
        with torch.no_grad():
            _, routings = self.loss_and_routing((x,))
        return {"routing": routings}

    def on_test_epoch_start(self) -> None:
        super().on_test_epoch_start()
        if self.expert_load is not None:
            self.expert_load.counts.clear()

    def on_test_epoch_end(self) -> None:
        super().on_test_epoch_end()
        if self.expert_load is None or not self.expert_load.counts or not self.hparams.plots:
            return
        from zoo_tasks.timeseries.generation.plots import load_heatmap

        load, folder = self.expert_load, self.run_folder()
        figures = getattr(self, "_figures", {})
        figures["load_per_domain"] = load_heatmap(
            load.per_group(), list(load.counts), folder / "expert_load_domain.png", "expert load per case"
        )
        figures["load_per_band"] = load_heatmap(
            np.asarray(load.per_band()), load.band_labels(), folder / "expert_load_band.png", "load per noise band"
        )
        self._figures = figures

    def extra_results(self) -> dict:
        results = self.evaluation_results()
        if self.expert_load is not None and self.expert_load.counts:
            results["expert_load"] = self.expert_load.summary()
        return results
