"""What the conformance suite (:mod:`zoo.conformance`) checks in a training step: the step's outputs follow the zoo's
protocol, each routing has consistent shapes, and every gate of the model gets a gradient."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping

import pytorch_lightning as pl
import torch

from zoo.moe.routing import Routing


class ConformanceFailure(AssertionError):
    """A task's model breaks the zoo's step protocol, its checkpoint round trip or its declared router refusals."""


def require(condition: bool, message: str) -> None:
    """Raise :class:`ConformanceFailure` with ``message`` unless ``condition``."""
    if not condition:
        raise ConformanceFailure(message)


def check_routing(name: str, routing) -> None:
    """``routing`` is a :class:`zoo.moe.Routing` over T > 0 tokens with consistent shapes: indices (T, k) integer in
    [-1, E), weights (T, k) finite, logits (T, E) finite, valid (T,) and probs / load_prob (T, E) where given."""
    require(isinstance(routing, Routing), f"routing {name!r}: expected a zoo.moe.Routing, got {type(routing).__name__}")
    indices, weights, logits = routing.indices, routing.weights, routing.logits
    require(indices.ndim == 2, f"routing {name!r}: indices must be (T, k), got shape {tuple(indices.shape)}")
    tokens, experts = indices.shape[0], logits.shape[-1]
    require(tokens > 0, f"routing {name!r}: no tokens")
    require(not indices.is_floating_point(), f"routing {name!r}: indices must be integers, got {indices.dtype}")
    require(
        tuple(weights.shape) == tuple(indices.shape),
        f"routing {name!r}: weights {tuple(weights.shape)} differ from indices {tuple(indices.shape)}",
    )
    require(
        tuple(logits.shape) == (tokens, experts),
        f"routing {name!r}: logits must be (T={tokens}, E), got {tuple(logits.shape)}",
    )
    require(
        bool(((indices >= -1) & (indices < experts)).all()),
        f"routing {name!r}: an expert index outside [-1, {experts})",
    )
    require(bool(torch.isfinite(weights).all()), f"routing {name!r}: non-finite combine weights")
    require(bool(torch.isfinite(logits).all()), f"routing {name!r}: non-finite router logits")
    if routing.valid is not None:
        require(routing.valid.numel() == tokens, f"routing {name!r}: valid holds {routing.valid.numel()} of {tokens}")
    for field in ("probs", "load_prob"):
        value = getattr(routing, field)
        if value is not None:
            require(
                tuple(value.shape) == (tokens, experts),
                f"routing {name!r}: {field} must be (T={tokens}, E={experts}), got {tuple(value.shape)}",
            )


def check_step_output(output, where: str) -> dict[str, Routing]:
    """A training step's output is ``{"loss": finite scalar, "routing": {layer: Routing, ...}}`` (at least one
    layer); returns the routings."""
    require(isinstance(output, Mapping), f"{where}: training_step must return a dict, got {type(output).__name__}")
    loss = output.get("loss")
    require(isinstance(loss, torch.Tensor), f"{where}: the step's 'loss' must be a tensor, got {type(loss).__name__}")
    require(loss.ndim == 0, f"{where}: the loss must be a scalar, got shape {tuple(loss.shape)}")
    require(bool(torch.isfinite(loss)), f"{where}: the loss is not finite ({loss.item()})")
    routings = output.get("routing")
    require(
        isinstance(routings, Mapping) and len(routings) > 0,
        f"{where}: the step must return 'routing': {{layer name: zoo.moe.Routing}}, got {type(routings).__name__}",
    )
    for name, routing in routings.items():
        check_routing(f"{where}: {name}", routing)
    return dict(routings)


def check_summary(summary: Mapping[str, Mapping], layers: set[str], where: str) -> None:
    """The routing statistics callback's train summary (``RoutingSummary.to_dict()``) names every layer the steps
    routed, over real tokens, and is JSON-able with finite numbers."""
    require(set(summary) == layers, f"{where}: the routing summary holds {sorted(summary)}, the steps {sorted(layers)}")
    json.dumps(summary)
    for layer, stats in summary.items():
        require(stats["tokens"] > 0, f"{where}: routing summary of {layer!r} counts no tokens")
        numbers = [v for v in stats.values() if isinstance(v, float)]
        require(all(math.isfinite(v) for v in numbers), f"{where}: non-finite routing statistic in {layer!r}")


def gate_of(parameter: str, patterns: tuple[str, ...]) -> str | None:
    """The gate a parameter belongs to: its name up to the end of the first of ``patterns`` it holds, or None.
    ``("router",)``: ``"actor.router.gate.weight"`` -> ``"actor.router"``; a gate's feature layers join it
    (``"net.router_conv.weight"`` -> ``"net.router"``), as their gradient passes through the gate's own weights (zero
    at initialisation in noisy top-k)."""
    for pattern in patterns:
        at = parameter.find(pattern)
        if at >= 0:
            return parameter[: at + len(pattern)]
    return None


class StepProbe(pl.Callback):
    """Keeps every training and evaluation step's outputs, and after each backward pass (automatic or
    ``manual_backward``) which gates got a finite, non-zero gradient (see :func:`gate_of`); stops the fit after
    ``steps`` training steps that returned an output (the epoch's validation still runs). Steps that return None
    (Lightning's "nothing to optimise", e.g. an RL agent filling its replay buffer first) are not counted."""

    def __init__(self, router_parameters: tuple[str, ...], steps: int | None = None) -> None:
        self.patterns, self.steps = router_parameters, steps
        self.train_outputs: list = []
        self.val_outputs: list = []
        self.gates: set[str] = set()
        self.reached: set[str] = set()
        self.nonfinite: set[str] = set()

    def on_after_backward(self, trainer, pl_module) -> None:
        for name, parameter in pl_module.named_parameters():
            gate = gate_of(name, self.patterns) if parameter.requires_grad else None
            if gate is None:
                continue
            self.gates.add(gate)
            grad = parameter.grad
            if grad is None:
                continue
            if not bool(torch.isfinite(grad).all()):
                self.nonfinite.add(name)
            elif bool(grad.abs().sum() > 0):
                self.reached.add(gate)

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        if (
            not outputs
        ):  # None ({} under manual optimisation): a step that trained nothing (an agent filling its buffer)
            return
        self.train_outputs.append(outputs)
        if self.steps is not None and len(self.train_outputs) >= self.steps:
            trainer.should_stop = True

    def on_validation_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, dataloader_idx=0) -> None:
        self.val_outputs.append(outputs)

    def on_test_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, dataloader_idx=0) -> None:
        self.val_outputs.append(outputs)

    def check_gradients(self, where: str) -> None:
        """Every gate got a gradient in the steps seen (a model whose gates have no parameters passes)."""
        require(not self.nonfinite, f"{where}: non-finite gradient in {sorted(self.nonfinite)}")
        missed = sorted(self.gates - self.reached)
        require(not missed, f"{where}: no gradient reached the gate(s) {missed}")


def summarise_outputs(outputs: list) -> list[dict[str, torch.Tensor]]:
    """Each evaluation step's routings as plain tensors (for comparing two models' outputs on the same batches)."""
    found = []
    for output in outputs:
        routings = output.get("routing", {}) if isinstance(output, Mapping) else {}
        step = {}
        for layer, routing in routings.items() if isinstance(routings, Mapping) else ():
            if isinstance(routing, Routing):
                step.update({f"{layer}.indices": routing.indices, f"{layer}.weights": routing.weights.detach()})
        found.append(step)
    return found
