"""Lightning callback: log routing stats of every MoE layer and save expert-load heatmaps at fit end."""

from __future__ import annotations

import os
import re

import pytorch_lightning as pl
import torch

from zoo.moe.layer import moe_layers
from zoo.moe.stats import SCALAR_KEYS, routing_stats


class RoutingStatsCallback(pl.Callback):
    """Finds every submodule exposing ``last_routing`` (MoE layers, bare routers) and, per layer:

    - every ``log_every_n_steps`` training steps (default: the trainer's), logs at most
      ``len(SCALAR_KEYS)`` scalars as ``moe/<layer>/<key>``: normalised router entropy, load entropy,
      max/mean load, dead experts, dropped slots; at most ``max_layers`` layers are logged;
    - accumulates the per-expert load (E,) every step, and keeps a load snapshot per logging step;
    - at ``on_fit_end`` writes ``expert_load_<layer>.png`` (snapshot x expert heatmap) per layer and
      ``expert_load_layers.png`` (layer x expert, whole fit) into ``trainer.log_dir`` (or
      ``default_root_dir``). A model without MoE layers is fine: nothing is logged or written.
    """

    def __init__(
        self,
        log_every_n_steps: int | None = None,
        max_layers: int = 32,
        max_snapshots: int = 256,
        heatmaps: bool = True,
    ):
        super().__init__()
        self.log_every_n_steps, self.max_layers = log_every_n_steps, max_layers
        self.max_snapshots, self.heatmaps = max_snapshots, heatmaps
        self.total_load: dict[str, torch.Tensor] = {}
        self.snapshots: dict[str, list[torch.Tensor]] = {}
        self.written: list[str] = []

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        every = self.log_every_n_steps or getattr(trainer, "log_every_n_steps", 50) or 1
        log_now = trainer.global_step % every == 0
        for name, module in moe_layers(pl_module)[: self.max_layers]:
            routing = module.last_routing
            if routing is None:
                continue
            stats = routing.stats if "load" in routing.stats else routing_stats(routing)
            load = stats["load"].detach().float().cpu()
            key = name or "root"
            if key in self.total_load and self.total_load[key].shape == load.shape:
                self.total_load[key] += load
            else:
                self.total_load[key] = load.clone()
            if log_now:
                snaps = self.snapshots.setdefault(key, [])
                snaps.append(load)
                if len(snaps) > self.max_snapshots:  # keep every other one: bounded memory, whole history
                    del snaps[::2]
                values = {f"moe/{key}/{k}": float(stats[k]) for k in SCALAR_KEYS if k in stats}
                pl_module.log_dict(values, on_step=True, on_epoch=False, batch_size=1)

    def _out_dir(self, trainer) -> str:
        return trainer.log_dir or trainer.default_root_dir

    def on_fit_end(self, trainer, pl_module) -> None:
        if not self.heatmaps or not self.total_load or not trainer.is_global_zero:
            return
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        out = self._out_dir(trainer)
        os.makedirs(out, exist_ok=True)
        for key, snaps in self.snapshots.items():
            fig, ax = plt.subplots(figsize=(8, 4))
            im = ax.imshow(torch.stack(snaps).numpy(), aspect="auto", cmap="viridis", interpolation="nearest")
            ax.set(xlabel="expert", ylabel="logged step", title=f"expert load: {key}")
            fig.colorbar(im, ax=ax, label="load fraction")
            self._save(fig, os.path.join(out, f"expert_load_{_safe(key)}.png"))
        same_width = {v.numel() for v in self.total_load.values()}
        if len(same_width) == 1:
            grid = torch.stack([v / v.sum().clamp_min(1e-12) for v in self.total_load.values()])
            fig, ax = plt.subplots(figsize=(8, 1 + 0.4 * grid.shape[0]))
            im = ax.imshow(grid.numpy(), aspect="auto", cmap="viridis", interpolation="nearest")
            ax.set_yticks(range(grid.shape[0]), list(self.total_load))
            ax.set(xlabel="expert", title="expert load over the fit")
            fig.colorbar(im, ax=ax, label="load fraction")
            self._save(fig, os.path.join(out, "expert_load_layers.png"))

    def _save(self, fig, path: str) -> None:
        import matplotlib.pyplot as plt

        fig.tight_layout()
        fig.savefig(path, dpi=80)
        plt.close(fig)
        self.written.append(path)


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name)
