"""Lightning callback: routing statistics of every mixture, read from the step outputs, logged and written to disk."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping

import pytorch_lightning as pl
import torch
import torch.distributed as dist

from zoo.moe.routing import Routing
from zoo.moe.stats import RoutingSummary, routing_summary
from zoo.utils.figures import pyplot, save_figure

SUMMARY_FILE = "routing_summary.json"


def step_routings(outputs) -> dict[str, Routing]:
    """``outputs["routing"]`` of a step (``{layer_name: Routing}``; a bare Routing is named "moe"), or {}."""
    if not isinstance(outputs, Mapping):
        return {}
    routing = outputs.get("routing")
    if isinstance(routing, Routing):
        return {"moe": routing}
    if isinstance(routing, Mapping):
        return {str(k): v for k, v in routing.items() if isinstance(v, Routing)}
    return {}


class RoutingStatsCallback(pl.Callback):
    """Reads each step's routings from its outputs: ``training_step`` / ``validation_step`` / ``test_step`` return
    ``{"loss": loss, "routing": {layer_name: Routing, ...}}`` (validation and test without "loss" if they like).

    - every ``log_every_n_steps`` training steps (default: the trainer's), logs ``len(SCALAR_KEYS)`` scalars per
      layer as ``moe/<layer>/<key>`` (normalised router entropy, load entropy, max/mean load, dead experts,
      dropped slots) for the first ``max_layers`` layers, and keeps their load (E,) as a heatmap snapshot;
    - accumulates a `zoo.moe.RoutingSummary` per stage ("train", "validate", "test"; sanity checks excluded);
    - at ``on_fit_end`` writes ``expert_load_<layer>.png`` (logged step x expert heatmap) per layer and
      ``expert_load_layers.png`` (layer x expert, whole fit), and at fit end and test end writes
      ``routing_summary.json`` = ``{"train": {...}, "validate": {...}, "test": {...}}`` (only stages that saw a
      routing; each ``RoutingSummary.to_dict()``, merged over all data-parallel processes) into ``trainer.log_dir``
      (or ``default_root_dir``), on rank 0; the per-layer heatmaps show rank 0's logged steps. A model that
      returns no routing is fine: nothing is logged or written.
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
        self.summaries: dict[str, RoutingSummary] = {}
        self.snapshots: dict[str, list[torch.Tensor]] = {}
        self.written: list[str] = []

    def _accumulate(self, stage: str, routings: dict[str, Routing]) -> RoutingSummary:
        step = routing_summary(routings)
        self.summaries[stage] = self.summaries[stage].merge(step) if stage in self.summaries else step
        return step

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        routings = step_routings(outputs)
        if not routings:
            return
        step = self._accumulate("train", routings)
        every = self.log_every_n_steps or getattr(trainer, "log_every_n_steps", 50) or 1
        if trainer.global_step % every:
            return
        values = {}
        for key, layer in list(step.layers.items())[: self.max_layers]:
            snaps = self.snapshots.setdefault(key, [])
            snaps.append(torch.tensor(layer.load))
            if len(snaps) > self.max_snapshots:  # keep every other one: bounded memory, whole history
                del snaps[::2]
            values.update({f"moe/{key}/{k}": v for k, v in layer.scalars().items()})
        pl_module.log_dict(values, on_step=True, on_epoch=False, batch_size=1)

    def on_validation_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, dataloader_idx=0) -> None:
        routings = step_routings(outputs)
        if routings and not trainer.sanity_checking:
            self._accumulate("validate", routings)

    def on_test_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, dataloader_idx=0) -> None:
        routings = step_routings(outputs)
        if routings:
            self._accumulate("test", routings)

    def _out_dir(self, trainer) -> str:
        return trainer.log_dir or trainer.default_root_dir  # log_dir is a collective under DDP: call on every rank

    def _gathered(self) -> dict[str, RoutingSummary]:
        """The per-stage summaries merged over data-parallel processes (collective: every rank calls it)."""
        if not (dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1):
            return self.summaries
        parts: list = [None] * dist.get_world_size()
        dist.all_gather_object(parts, self.summaries)
        merged: dict[str, RoutingSummary] = {}
        for part in parts:
            for stage, summary in part.items():
                merged[stage] = merged[stage].merge(summary) if stage in merged else summary
        return merged

    def summary_dict(self, summaries: dict[str, RoutingSummary] | None = None) -> dict[str, dict]:
        """``{stage: RoutingSummary.to_dict()}`` for the stages that saw a routing (this process's own by default)."""
        summaries = self.summaries if summaries is None else summaries
        return {s: summaries[s].to_dict() for s in ("train", "validate", "test") if summaries.get(s)}

    def _write_summary(self, trainer) -> tuple[str, dict[str, RoutingSummary]]:
        """Every rank calls this (collectives); rank 0 writes the summary of all processes' batches."""
        out, summaries = self._out_dir(trainer), self._gathered()
        content = self.summary_dict(summaries)
        if trainer.is_global_zero and content:
            os.makedirs(out, exist_ok=True)
            path = os.path.join(out, SUMMARY_FILE)
            with open(path, "w") as f:
                json.dump(content, f, indent=1)
            if path not in self.written:
                self.written.append(path)
        return out, summaries

    def on_fit_end(self, trainer, pl_module) -> None:
        out, summaries = self._write_summary(trainer)
        if self.heatmaps and trainer.is_global_zero and summaries.get("train"):
            self._write_heatmaps(out, summaries["train"])
        trainer.strategy.barrier("routing_stats_fit_end")  # the other ranks go on once rank 0's files exist

    def on_test_end(self, trainer, pl_module) -> None:
        self._write_summary(trainer)
        trainer.strategy.barrier("routing_stats_test_end")

    def _write_heatmaps(self, out: str, train: RoutingSummary) -> None:
        plt = pyplot()
        for key, snaps in self.snapshots.items():
            fig, ax = plt.subplots(figsize=(8, 4))
            im = ax.imshow(torch.stack(snaps).numpy(), aspect="auto", cmap="viridis", interpolation="nearest")
            ax.set(xlabel="expert", ylabel="logged step", title=f"expert load: {key}")
            fig.colorbar(im, ax=ax, label="load fraction")
            self.written.append(save_figure(fig, os.path.join(out, f"expert_load_{_safe(key)}.png"), dpi=80))
        layers = train.layers
        if len({s.num_experts for s in layers.values()}) == 1:
            grid = torch.tensor([s.load for s in layers.values()])
            fig, ax = plt.subplots(figsize=(8, 1 + 0.4 * grid.shape[0]))
            im = ax.imshow(grid.numpy(), aspect="auto", cmap="viridis", interpolation="nearest")
            ax.set_yticks(range(grid.shape[0]), list(layers))
            ax.set(xlabel="expert", title="expert load over the fit")
            fig.colorbar(im, ax=ax, label="load fraction")
            self.written.append(save_figure(fig, os.path.join(out, "expert_load_layers.png"), dpi=80))


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name)
