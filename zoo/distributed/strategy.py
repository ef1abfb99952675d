"""`ExpertParallelStrategy`: Lightning's DDP launch and process group, with the experts of every `zoo.moe.MoE`
spread over the ranks instead of copied onto each (issue 61; DeepSpeed-MoE's ``ep_size``, Rajbhandari et al. 2022).

    zoo fit --config ... --trainer.accelerator cpu --trainer.devices 2 \\
        --trainer.strategy zoo.distributed.ExpertParallelStrategy --trainer.strategy.ep_size 2

With ``world = ep_size x dp_size`` ranks, the ranks ``[i * ep_size, (i + 1) * ep_size)`` share one copy of the
experts (each holds E / ep_size of every layer's experts) and exchange tokens by all-to-all
(``zoo.moe.ExpertParallelMoE``); every rank reads its own batches (Lightning's distributed sampler). The model is
not wrapped in ``DistributedDataParallel``: after each optimiser step's last backward, ``zoo.moe.reduce_gradients``
averages every replicated gradient over all ranks and every expert gradient over the ranks that hold the same
experts (DDP would also average the experts over ranks holding different experts). Gradient accumulation reduces
once, before the step; gradient clipping sees the reduced gradients.

Checkpoints hold the one-process layout (``zoo.moe.gather_state_dict`` and this package's
``gather_optimizer_state``, collectives run by every rank while rank 0 writes), so a run saved at world 2 resumes
at world 1 and the reverse, and ``--ckpt_path last`` and ``zoo test`` work at any world size: the weights load into
the whole model before it is spread, and the optimizer state is cut to each rank's experts on load.

Memory: ``zoo fit`` builds the model with only this process's experts (``zoo.distributed.local_build``), so no
process ever holds the whole bank; ``max_expert_mib`` is a budget for the expert weights one process holds, and a
model that would pass it is refused in one line before its weights are allocated.

Limits: tensor-bank experts only (``experts="mlp"`` and the other named types; a ModuleList bank is refused), and
what ``zoo.moe.ExpertParallelMoE`` refuses (expert-choice routing). Tested with gloo between CPU processes; NCCL
runs the same collectives but is not tested here.
"""

from __future__ import annotations

from typing import Any

import pytorch_lightning as pl
from lightning_fabric.utilities.optimizer import _optimizer_to_device, _optimizers_to_device
from pytorch_lightning.overrides.distributed import _sync_module_states
from pytorch_lightning.strategies import DDPStrategy, Strategy
from pytorch_lightning.trainer.states import TrainerFn

from zoo.distributed.optimizer_state import gather_optimizer_state, shard_optimizer_state
from zoo.errors import ConfigError


class ExpertParallelStrategy(DDPStrategy):
    """DDP's processes with expert parallelism; ``ep_size`` None: every rank holds distinct experts (dp 1)."""

    strategy_name = "expert_parallel"

    def __init__(self, ep_size: int | None = None, max_expert_mib: float | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.ep_size = ep_size
        self.max_expert_mib = max_expert_mib
        self._groups = None

    # -- spreading the experts ---------------------------------------------------------------------------------
    def _spread_experts(self) -> None:
        """Copy rank 0's model to every rank, then keep this rank's share of each MoE's experts (once)."""
        from zoo.moe import MoE, build_parallel_groups, to_expert_parallel
        from zoo.moe.experts import ModuleListExperts

        model = self.lightning_module
        if self._groups is not None:
            return
        layers = [m for m in model.modules() if type(m) is MoE]
        if not layers:
            raise ConfigError(f"{type(model).__name__} has no zoo.moe.MoE layer: use --trainer.strategy ddp")
        if any(isinstance(m.experts, ModuleListExperts) for m in layers):
            raise ConfigError("the expert_parallel strategy needs tensor-bank experts (a named expert type)")
        world = self.world_size
        ep = self.ep_size or world
        if world % ep:
            raise ConfigError(f"--trainer.strategy.ep_size {ep} does not divide the {world} processes")
        for layer in layers:
            if layer.num_experts % ep:
                raise ConfigError(f"{layer.num_experts} experts do not split over ep_size {ep}")
        _sync_replicated(model)  # the initial weights of rank 0 everywhere (what DDP's constructor does)
        self._groups = build_parallel_groups(ep)
        to_expert_parallel(model, self._groups.ep_group)
        held = sum(p.numel() * p.element_size() for layer in layers for p in layer.experts.parameters())
        if self.max_expert_mib is not None and held > self.max_expert_mib * (1 << 20):
            raise ConfigError(  # a model built whole (not by zoo fit): it held every expert already
                f"this process holds {held / (1 << 20):.1f} MiB of expert weights, over --trainer.strategy."
                f"max_expert_mib {self.max_expert_mib}: build the model under zoo.moe.local_expert_init, or spread "
                "the experts over more processes"
            )

    def setup(self, trainer: pl.Trainer) -> None:
        # DDPStrategy.setup, without the DDP wrapper and without its broadcast of every parameter from rank 0
        # (after the experts are spread, ranks hold different experts)
        self.accelerator.setup(trainer)
        self.precision_plugin.convert_module(self.model)
        self.model_to_device()
        self._spread_experts()
        if trainer.state.fn == TrainerFn.FITTING:
            self.setup_optimizers(trainer)
        self.setup_precision_plugin()
        if trainer.state.fn == TrainerFn.FITTING:
            _optimizers_to_device(self.optimizers, self.root_device)

    def pre_backward(self, closure_loss) -> None:
        Strategy.pre_backward(self, closure_loss)  # DDP's prepare_for_backward needs its wrapper

    def post_backward(self, closure_loss) -> None:
        Strategy.post_backward(self, closure_loss)

    # -- gradients -----------------------------------------------------------------------------------------------
    def optimizer_step(self, optimizer, closure, model=None, **kwargs: Any) -> Any:
        from zoo.moe import reduce_gradients

        def reduced_closure():
            result = closure()  # the last micro-batch's forward and backward (manual optimisation: nothing)
            reduce_gradients(self.lightning_module, self._groups)
            return result

        return super().optimizer_step(optimizer, reduced_closure, model, **kwargs)

    # -- checkpoints in the one-process layout -------------------------------------------------------------------
    def lightning_module_state_dict(self) -> dict[str, Any]:
        from zoo.moe import gather_state_dict

        if self._groups is None:
            return super().lightning_module_state_dict()
        return gather_state_dict(self.lightning_module)

    def optimizer_state(self, optimizer) -> dict[str, Any]:
        if self._groups is None:
            return super().optimizer_state(optimizer)
        return gather_optimizer_state(self.lightning_module, getattr(optimizer, "_optimizer", optimizer))

    def load_model_state_dict(self, checkpoint, strict: bool = True) -> None:
        from zoo.moe import shard_state_dict

        if self._groups is None and not _built_local(self.lightning_module):
            return super().load_model_state_dict(checkpoint, strict)  # before setup: the whole model, spread later
        self._spread_experts()  # a model built with this rank's experts only takes its share of the checkpoint
        state = shard_state_dict(checkpoint["state_dict"], self.lightning_module)
        self.lightning_module.load_state_dict(state, strict=strict)

    def load_optimizer_state_dict(self, checkpoint) -> None:
        for optimizer, state in zip(self.optimizers, checkpoint["optimizer_states"]):
            optimizer.load_state_dict(shard_optimizer_state(state, self.lightning_module, optimizer))
            _optimizer_to_device(optimizer, self.root_device)


def _holds_share(module) -> bool:
    """Whether ``module`` is an ``MoE`` layer holding only its share of the experts (``local_expert_init``)."""
    from zoo.moe import MoE

    return type(module) is MoE and module.experts.num_experts != module.num_experts


def _built_local(model) -> bool:
    """Whether ``model``'s MoE layers hold only their share of the experts (built under ``local_expert_init``)."""
    return any(_holds_share(m) for m in model.modules())


def _share_names(model) -> set[str]:
    """The state names of every expert bank ``model`` holds as this rank's own share (not to be synchronised).
    Layers are told by type, never by ``in`` on a list: torchmetrics' ``Metric.__eq__`` returns a (truthy) metric."""
    return {
        f"{name}.experts.{key}" if name else f"experts.{key}"
        for name, m in model.named_modules()
        if _holds_share(m)
        for key in m.experts.state_dict()
    }


def _sync_replicated(model) -> None:
    """Rank 0's parameters and buffers on every rank; a bank built as each rank's own share keeps its experts."""
    names = _share_names(model)
    before = getattr(model, "_ddp_params_and_buffers_to_ignore", None)
    model._ddp_params_and_buffers_to_ignore = set(before or ()) | names
    try:
        _sync_module_states(model)
    finally:
        if before is None:
            del model._ddp_params_and_buffers_to_ignore
        else:
            model._ddp_params_and_buffers_to_ignore = before
