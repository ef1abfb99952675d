"""Running a task's declared tiny models (``TaskSpec.conformance``) for the conformance suite (:mod:`zoo.conformance`):
each is built as ``zoo fit`` builds it, trained for two steps and checked (step protocol, checkpoint round trip, every
router of ``zoo.moe.ROUTERS`` trained or refused as declared)."""

from __future__ import annotations

import importlib
import inspect
import re
from dataclasses import dataclass
from pathlib import Path

from zoo.conformance import builtin_routers
from zoo.errors import ConfigError
from zoo.registry import ConformanceCase, TaskSpec, load_object, missing_dependency

# What the suite adds to a case's own settings: one validation batch after each epoch (a module's early stopping or
# best-checkpoint monitor needs its metric), no logger or checkpoints (the run folder is a temporary one). The
# epochs and training batches are the steps asked for: a StepProbe stops the fit after that many training steps,
# within one epoch of a dataset, or over as many epochs of a single batch (a whole graph).
TRAINER = (
    "--trainer.max_steps=-1",
    "--trainer.limit_val_batches=1",
    "--trainer.limit_test_batches=1",
    "--trainer.val_check_interval=1.0",
    "--trainer.check_val_every_n_epoch=1",
    "--trainer.num_sanity_val_steps=0",
    "--trainer.logger=false",
    "--trainer.enable_checkpointing=false",
    "--trainer.enable_progress_bar=false",
    "--trainer.enable_model_summary=false",
    "--trainer.accelerator=cpu",
    "--trainer.devices=1",
)
STEPS = 2
APPLY = re.compile(r"that apply: ([\w-]+(?:, [\w-]+)*)")


class CaseSkipped(Exception):
    """A case cannot run on this machine (a dataset or a package is missing); the message says what to do."""


# -- building and training a case --------------------------------------------------------------------------------------
def missing_requirement(case: ConformanceCase) -> str | None:
    """The one-line reason ``case`` cannot run here: a package it names that does not import, or a dataset that is
    not on this machine (located without a download or hashing); None when it can."""
    from zoo.data.resolve import locate

    for module in case.packages:
        try:
            importlib.import_module(module)
        except ImportError as exc:
            return f"conformance case {case.name!r} needs {module}, which does not import here ({exc})"
    for name in case.datasets:
        found = locate(name)
        if not found.present:
            return found.skip_reason()
    return None


def case_args(spec: TaskSpec, case: ConformanceCase, root: Path, run: str, steps: int, router: str | None) -> list[str]:
    """The ``zoo fit`` arguments of one run of ``case``: its config, the files its ``prepare`` writes, its overrides
    (``{files}`` standing for ``root/files``), the suite's trainer settings (``steps`` training steps, run folder
    ``root/run``) and ``router``."""
    files = root / "files"
    args = ["--config", str(spec.config_path(case.config))]
    if case.prepare:
        files.mkdir(parents=True, exist_ok=True)
        args += list(load_object(case.prepare)(files))
    args += [arg.replace("{files}", str(files)) for arg in case.overrides]
    args += [*TRAINER, f"--trainer.max_epochs={steps}", f"--trainer.limit_train_batches={steps + case.warmup_steps}"]
    args.append(f"--trainer.default_root_dir={root / run}")
    if router is not None:
        args.append(f"--{spec.router_arg}.router={router}")
    return args


def build(spec: TaskSpec, case: ConformanceCase, root: Path, run: str, steps: int = STEPS, router: str | None = None):
    """``case``'s model, datamodule and trainer as ``zoo fit`` builds them (a ``ZooCLI`` with ``run=False``), writing
    into ``root/run`` (and the case's files into ``root/files``).

    Raises:
        CaseSkipped: a dataset of the case is not on this machine, or the task needs a package that is not installed.
        ConfigError: the model refuses its settings (a router that cannot route its mixture).
    """
    from zoo.cli.lightning_cli import ZooCLI

    reason = missing_requirement(case)
    if reason:
        raise CaseSkipped(reason)
    (root / run).mkdir(parents=True, exist_ok=True)
    try:
        return ZooCLI(args=case_args(spec, case, root, run, steps, router), run=False)
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - a missing package is a skip, anything else the error
        reason = missing_dependency(exc)  # a task module importing a package that is not installed
        if reason:
            raise CaseSkipped(reason) from None
        raise


@dataclass
class TrainedCase:
    """A case after its training steps: the ``ZooCLI`` that built it and what its steps returned."""

    spec: TaskSpec
    case: ConformanceCase
    cli: object
    probe: object
    router: str | None
    root: Path


def train_case(
    spec: TaskSpec,
    case: ConformanceCase,
    root: Path,
    run: str = "train",
    steps: int = STEPS,
    router: str | None = None,
    datamodule=None,
    heatmaps: bool = True,
) -> TrainedCase:
    """Build ``case`` (see :func:`build`) and fit it (see :func:`fit_case`)."""
    return fit_case(spec, case, build(spec, case, root, run, steps, router), root, router, steps, datamodule, heatmaps)


def fit_case(
    spec: TaskSpec,
    case: ConformanceCase,
    cli,
    root: Path,
    router: str | None = None,
    steps: int = STEPS,
    datamodule=None,
    heatmaps: bool = True,
) -> TrainedCase:
    """Fit a built case (``cli``) for ``steps`` training steps, each epoch's last followed by one validation batch; on
    ``datamodule`` (one an earlier run of the case set up, so its data is read once) or on the one built with the
    model. ``heatmaps=False``: the routing statistics callback draws no expert-load figures (the router sweep's runs:
    the case's own run draws them)."""
    from zoo.callbacks.routing_stats import RoutingStatsCallback
    from zoo.conformance_probe import StepProbe

    for callback in cli.trainer.callbacks:
        if isinstance(callback, RoutingStatsCallback):
            callback.heatmaps = callback.heatmaps and heatmaps
    probe = StepProbe(case.router_parameters, steps)
    cli.trainer.callbacks.append(probe)
    cli.trainer.fit(cli.model, datamodule=datamodule or cli.datamodule)
    return TrainedCase(spec, case, cli, probe, router, root)


def where(trained: TrainedCase) -> str:
    """``task/case`` (with its router when one was set) for messages."""
    return f"{trained.spec.name}/{trained.case.name}" + (f" with router {trained.router!r}" if trained.router else "")


def check_protocol(trained: TrainedCase, steps: int = STEPS) -> None:
    """Each training step returned the zoo's protocol, the routing statistics callback summarised the routed layers,
    and every gate got a gradient (see :mod:`zoo.conformance_probe`)."""
    from zoo.callbacks.routing_stats import RoutingStatsCallback
    from zoo.conformance_probe import check_step_output, check_summary, require

    at = where(trained)
    outputs = trained.probe.train_outputs
    require(len(outputs) == steps, f"{at}: {len(outputs)} training steps ran, expected {steps}")
    layers: set[str] = set()
    for i, output in enumerate(outputs):
        layers |= set(check_step_output(output, f"{at}, step {i}"))
    stats = [c for c in trained.cli.trainer.callbacks if isinstance(c, RoutingStatsCallback)]
    require(len(stats) == 1, f"{at}: zoo fit's trainer has {len(stats)} RoutingStatsCallback")
    check_summary(stats[0].summary_dict().get("train", {}), layers, at)
    trained.probe.check_gradients(at)
    check_router_in_use(trained)


def check_router_in_use(trained: TrainedCase) -> None:
    """When the model holds ``zoo.moe`` Router modules and a registry router was set, one of them is of its class."""
    from zoo.conformance_probe import require
    from zoo.moe import ROUTERS, Router

    if trained.router is None or trained.router not in ROUTERS:
        return
    routers = [m for m in trained.cli.model.modules() if isinstance(m, Router)]
    if routers:
        classes = sorted({type(m).__name__ for m in routers})
        require(
            any(type(m) is ROUTERS[trained.router] for m in routers),
            f"{where(trained)}: no {ROUTERS[trained.router].__name__} in the model (its routers: {classes})",
        )


# -- the checkpoint round trip -----------------------------------------------------------------------------------------
def evaluation_stage(model, datamodule) -> str | None:
    """``"validate"`` when the module has a validation step and the datamodule validation data, else ``"test"`` when
    both have theirs, else None."""
    import pytorch_lightning as pl
    from pytorch_lightning.utilities.model_helpers import is_overridden

    for stage, step, loader in (
        ("validate", "validation_step", "val_dataloader"),
        ("test", "test_step", "test_dataloader"),
    ):
        if is_overridden(step, model, pl.LightningModule) and is_overridden(loader, datamodule, pl.LightningDataModule):
            return stage
    return None


def evaluate(cli, probe, stage: str, ckpt: Path | None = None) -> tuple[dict, list]:
    """Logged metrics and step outputs of one ``stage`` pass (one batch) from seed 0, after loading ``ckpt``."""
    import pytorch_lightning as pl

    from zoo.conformance_probe import summarise_outputs

    run = getattr(cli.trainer, stage)
    kwargs = {"weights_only": True} if "weights_only" in inspect.signature(run).parameters else {}
    probe.val_outputs.clear()
    pl.seed_everything(0, verbose=False)
    results = run(cli.model, datamodule=cli.datamodule, ckpt_path=str(ckpt) if ckpt else None, verbose=False, **kwargs)
    metrics = {k: float(v) for r in results for k, v in r.items()}
    return metrics, summarise_outputs(probe.val_outputs)


def check_round_trip(trained: TrainedCase) -> None:
    """Save a checkpoint of the trained case, load it into a freshly built module (as ``zoo validate --ckpt_path`` /
    ``zoo test --ckpt_path`` do), and compare: the same state and the same evaluation outputs on the same batch."""
    import torch

    from zoo.conformance_probe import StepProbe, require

    at = where(trained)
    ckpt = trained.root / "round_trip.ckpt"
    trained.cli.trainer.save_checkpoint(ckpt)
    stage = evaluation_stage(trained.cli.model, trained.cli.datamodule)
    before = evaluate(trained.cli, trained.probe, stage) if stage else None
    fresh = build(trained.spec, trained.case, trained.root, "fresh", router=trained.router)
    probe = StepProbe(trained.case.router_parameters)
    fresh.trainer.callbacks.append(probe)
    if stage:
        after = evaluate(fresh, probe, stage, ckpt)
    else:
        fresh.model.load_state_dict(torch.load(ckpt, weights_only=True)["state_dict"])
    saved, loaded = trained.cli.model.state_dict(), fresh.model.state_dict()
    require(
        sorted(saved) == sorted(loaded),
        f"{at}: the reloaded module's state differs in keys: {sorted(set(saved) ^ set(loaded))}",
    )
    changed = [k for k in saved if not torch.equal(saved[k], loaded[k])]
    require(not changed, f"{at}: the reloaded module differs in {changed[:5]}")
    if stage is None:
        return
    require(before[0] == after[0], f"{at}: {stage} metrics differ after the round trip: {before[0]} vs {after[0]}")
    require(len(before[1]) == len(after[1]), f"{at}: {stage} steps differ in number after the round trip")
    for step, (one, two) in enumerate(zip(*(before[1], after[1]))):
        differ = [k for k in one if k not in two or not torch.equal(one[k], two[k])]
        require(sorted(one) == sorted(two) and not differ, f"{at}: {stage} step {step} routes differently: {differ}")


# -- every router ------------------------------------------------------------------------------------------------------
def check_router(spec: TaskSpec, case: ConformanceCase, router: str, root: Path, datamodule=None) -> str:
    """``router`` on ``case``: two training steps through the protocol checks (returns ``"trained"``; a gate may get
    its first gradient in the second step, once zero-initialised experts differ), or a ConfigError when the model is
    built that names the routers that apply (returns ``"refused"``); either as ``case.refuses`` declares. A refusal
    once training has started is a failure. A router plugin (not built into ``zoo.moe``) that the case does not name
    may be refused: the case's declaration cannot know it; that refusal is a :class:`CaseSkipped` quoting the line.
    ``datamodule``: see :func:`fit_case`."""
    from zoo.conformance_probe import require

    at = f"{spec.name}/{case.name} with router {router!r}"
    declared = router in case.refuses
    try:
        cli = build(spec, case, root, f"router-{router}", router=router)
    except ConfigError as exc:
        line = str(exc).splitlines()[0] if str(exc) else repr(exc)
        require(router in line, f"{at}: the refusal does not name the router: {line}")
        listed = APPLY.search(line)
        require(
            listed is not None, f"{at}: the refusal does not say which routers apply ('... that apply: a, b'): {line}"
        )
        builtin = builtin_routers()
        if not declared and router not in builtin | set(case.routers):
            raise CaseSkipped(
                f"{at}: refused; the case's declaration, older than this router plugin, cannot say: {line}"
            ) from None
        require(declared, f"{at}: refused, but ConformanceCase.refuses does not list it: {line}")
        trains = builtin - set(case.refuses)
        require(
            set(listed.group(1).split(", ")) & builtin == trains,
            f"{at}: the refusal names {listed.group(1)} as applying; the case trains {', '.join(sorted(trains))}",
        )
        return "refused"
    require(not declared, f"{at}: ConformanceCase.refuses lists it, but the model builds and trains with it")
    check_protocol(fit_case(spec, case, cli, root, router, datamodule=datamodule, heatmaps=False))
    return "trained"
