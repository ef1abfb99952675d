"""Where a mixture's share of a training step goes: routing, dispatch, expert GEMMs and combine, forward and backward.

Measured from outside ``zoo.moe`` (nothing there is edited): while one training step runs under ``torch.profiler``,
the model's mixture parts are bracketed by ``record_function`` ranges named ``zoo.bench.phase/<phase>``:

- **routing**: the forward of every ``zoo.moe.Router`` module, of every other module whose own name contains
  ``router`` (a router's feature layers: C²GMoE's ``router_conv``), and of a module whose name starts with ``gate``
  held beside a ``Router`` (SPHERE's ``gate_body``);
- **dispatch**: ``zoo.moe``'s ``sort_by_expert`` and ``apply_capacity``; ``dispatch_combine`` up to the call of
  its experts' ``forward_sorted``; ``soft_moe`` up to the call of its experts;
- **experts**: ``forward_sorted`` / ``forward_dense`` / ``forward_expert`` of every module that has
  ``forward_sorted`` (an expert bank), the forward of every module whose own name contains ``expert`` or that is
  held in a ``ModuleList`` / ``ModuleDict`` whose name does (per-expert networks), and ``zoo.moe``'s
  ``segment_mm``: the expert GEMMs and what runs between them inside an expert;
- **combine**: ``dispatch_combine`` and ``soft_moe`` after their experts return, ``combine_dense`` and
  ``mixture_weights``.

The ``zoo.moe`` functions are wrapped by replacing every module-global reference to them in the loaded modules (tasks
import them by name) for the one step, then restored; module hooks and bank-method wrappers are removed the same way.
A range requested while another is open is not opened: its time counts in the outer one (``segment_mm`` inside a
bank, a router inside an expert).

**Forward**: the summed wall time of each phase's ranges. **Backward**: the autograd engine's ``evaluate_function``
events whose sequence number is that of an autograd node created inside one of a phase's forward ranges (the
profiler's forward-backward link; the node-creating op is the last op that observed that sequence number), summed
per phase. Not attributed to a phase (they are "other"): gradient accumulation into the parameters
(``AccumulateGrad`` has no sequence number), the optimiser step, everything outside the mixtures, and expert or
routing arithmetic a task writes inline (an einsum over stacked weights held by no module or bank): the split
counts which ranges it saw per phase, so a phase it did not see reads as such, not as zero cost.

The profiler adds a fixed overhead to every op, most to phases of many small ops: shares are shares of the profiled
step (``profiled_step_ms``, kept beside the unprofiled median), and phase times sum to at most that step.
"""

from __future__ import annotations

import functools
import sys
import time
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass, field

from torch import nn

PREFIX = "zoo.bench.phase/"
PHASES = ("routing", "dispatch", "experts", "combine")
EVALUATE = "autograd::engine::evaluate_function: "
# zoo.moe functions and the phase their whole call belongs to (dispatch_combine and soft_moe switch inside).
WHOLE_CALLS = {
    "sort_by_expert": "dispatch",
    "apply_capacity": "dispatch",
    "segment_mm": "experts",
    "combine_dense": "combine",
    "mixture_weights": "combine",
}
SWITCHING_CALLS = ("dispatch_combine", "soft_moe")
BANK_METHODS = ("forward_sorted", "forward_dense", "forward_expert")


class Ranges:
    """The phase ranges of one step: at most one open at a time; a request while one is open is not opened."""

    def __init__(self) -> None:
        self.current = None  # the open record_function
        self.seen = dict.fromkeys(PHASES, 0)  # ranges opened per phase

    def open(self, phase: str) -> bool:
        """Open ``phase``'s range unless one is open; returns whether this call opened it (and must close it)."""
        from torch.autograd.profiler import record_function

        if self.current is not None:
            return False
        self.current = record_function(PREFIX + phase)
        self.current.__enter__()
        self.seen[phase] += 1
        return True

    def close(self, owned: bool) -> None:
        """Close the open range if ``owned`` (what ``open`` returned)."""
        if owned and self.current is not None:
            current, self.current = self.current, None
            current.__exit__(None, None, None)

    def switch(self, phase: str) -> None:
        """Close the open range and open ``phase``'s (the owner of the open range only)."""
        self.close(True)
        self.open(phase)


def ranged(fn: Callable, phase: str, ranges: Ranges) -> Callable:
    """``fn`` with its whole call inside ``phase``'s range."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        owned = ranges.open(phase)
        try:
            return fn(*args, **kwargs)
        finally:
            ranges.close(owned)

    return wrapper


class _SwitchingExperts:
    """Stands for the experts handed to ``dispatch_combine`` (a bank) or ``soft_moe`` (a callable): calling them
    switches the open range from dispatch to experts, and their return from experts to combine."""

    def __init__(self, experts, ranges: Ranges) -> None:
        self.experts, self.ranges = experts, ranges

    def _run(self, fn, *args):
        self.ranges.switch("experts")
        try:
            return fn(*args)
        finally:
            self.ranges.switch("combine")

    def forward_sorted(self, x, counts):
        return self._run(self.experts.forward_sorted, x, counts)

    def __call__(self, *args):
        return self._run(self.experts, *args)


def switching(fn: Callable, ranges: Ranges, experts_at: int) -> Callable:
    """``fn`` (``dispatch_combine`` or ``soft_moe``, its experts the positional argument ``experts_at``) split into
    dispatch, experts and combine ranges."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if not ranges.open("dispatch"):
            return fn(*args, **kwargs)
        args = list(args)
        args[experts_at] = _SwitchingExperts(args[experts_at], ranges)
        try:
            return fn(*args, **kwargs)
        finally:
            ranges.close(True)

    return wrapper


@dataclass
class Instrumentation:
    """What ``install`` changed, so that ``remove`` can restore it."""

    ranges: Ranges
    globals_: list[tuple[dict, str, object]] = field(default_factory=list)
    methods: list[tuple[nn.Module, str, object]] = field(default_factory=list)
    hooks: list = field(default_factory=list)
    calls: list[dict] = field(default_factory=list)  # one per routing call: module, tokens, experts

    def remove(self) -> None:
        for namespace, name, original in self.globals_:
            namespace[name] = original
        for module, name, previous in self.methods:
            if previous is None:
                vars(module).pop(name, None)
            else:
                vars(module)[name] = previous
        for handle in self.hooks:
            handle.remove()
        self.globals_, self.methods, self.hooks = [], [], []


def _patch_globals(inst: Instrumentation) -> None:
    """Replace every module-global reference to the ``zoo.moe`` functions by its ranged wrapper."""
    import importlib

    dispatch, segment, soft = (importlib.import_module(f"zoo.moe.{m}") for m in ("dispatch", "segment_mm", "soft"))

    originals = {name: getattr(dispatch, name) for name in ("sort_by_expert", "apply_capacity", "combine_dense")}
    originals |= {"mixture_weights": dispatch.mixture_weights, "segment_mm": segment.segment_mm}
    wrappers = {id(fn): ranged(fn, WHOLE_CALLS[name], inst.ranges) for name, fn in originals.items()}
    wrappers[id(dispatch.dispatch_combine)] = switching(dispatch.dispatch_combine, inst.ranges, 2)
    wrappers[id(soft.soft_moe)] = switching(soft.soft_moe, inst.ranges, 2)
    for module in list(sys.modules.values()):
        namespace = getattr(module, "__dict__", None)
        if not isinstance(namespace, dict):
            continue
        for name, value in list(namespace.items()):
            wrapper = wrappers.get(id(value))
            if wrapper is not None and callable(value):
                inst.globals_.append((namespace, name, value))
                namespace[name] = wrapper


def _hook_module(inst: Instrumentation, module: nn.Module, phase: str) -> None:
    from zoo.moe import Routing

    owned: list[bool] = []

    def before(mod, args):
        owned.append(inst.ranges.open(phase))

    def after(mod, args, output):
        if phase == "routing" and owned and owned[-1] and isinstance(output, Routing):
            inst.calls.append({"tokens": int(output.indices.shape[0]), "experts": int(output.logits.shape[-1])})
        inst.ranges.close(owned.pop() if owned else False)

    inst.hooks += [module.register_forward_pre_hook(before), module.register_forward_hook(after)]


def _is_expert_module(name: str, module: nn.Module, parents: dict[str, nn.Module]) -> bool:
    if isinstance(module, (nn.ModuleList, nn.ModuleDict)):
        return False
    own = name.rpartition(".")[2].lower()
    parent_name = name.rpartition(".")[0]
    parent = parents.get(parent_name)
    held = isinstance(parent, (nn.ModuleList, nn.ModuleDict)) and "expert" in parent_name.rpartition(".")[2].lower()
    return "expert" in own or held


def install(model: nn.Module) -> Instrumentation:
    """Bracket ``model``'s mixture parts by phase ranges (see the module doc); ``remove()`` undoes it."""
    from zoo.moe import Router

    inst = Instrumentation(Ranges())
    _patch_globals(inst)
    modules = dict(model.named_modules())
    beside_router = {n.rpartition(".")[0] for n, m in modules.items() if n and isinstance(m, Router)}
    for name, module in modules.items():
        own = name.rpartition(".")[2].lower()
        gate = own.startswith("gate") and name.rpartition(".")[0] in beside_router
        if isinstance(module, Router) or (name and ("router" in own or gate)):
            _hook_module(inst, module, "routing")
        elif name and _is_expert_module(name, module, modules):
            _hook_module(inst, module, "experts")
        if callable(getattr(module, "forward_sorted", None)):
            for method in BANK_METHODS:
                bound = getattr(module, method, None)
                if callable(bound):
                    inst.methods.append((module, method, vars(module).get(method)))
                    vars(module)[method] = ranged(bound, "experts", inst.ranges)
    return inst


def _inside(intervals: list[tuple[float, float]], starts: list[float], event) -> int:
    """The index of the interval (sorted, not overlapping) holding ``event``, or -1."""
    at = bisect_right(starts, event.time_range.start) - 1
    return at if at >= 0 and event.time_range.end <= intervals[at][1] else -1


def _phase_of_sequence(events: list, thread: int, ranges: list[tuple[float, float, str]]) -> dict[int, str]:
    """Sequence number -> phase, for the forward ops on ``thread`` inside a phase range (the last forward op to
    observe a number is the one that created its node; ops run by a backward node observe its number too, and are
    left out)."""
    on_thread = sorted((e for e in events if e.thread == thread), key=lambda e: e.time_range.start)
    backward: list[tuple[float, float]] = []  # the outermost backward-node intervals, in time order
    for event in on_thread:
        if event.name.startswith(EVALUATE) and (not backward or event.time_range.start >= backward[-1][1]):
            backward.append((event.time_range.start, event.time_range.end))
    backward_starts, starts = [b[0] for b in backward], [r[0] for r in ranges]
    found: dict[int, str] = {}
    for event in on_thread:
        if event.sequence_nr < 0 or event.name.startswith(EVALUATE) or _inside(backward, backward_starts, event) >= 0:
            continue
        at = _inside(ranges, starts, event)
        if at >= 0:
            found[event.sequence_nr] = ranges[at][2]
        else:
            found.pop(event.sequence_nr, None)
    return found


def split_from_events(events: list) -> dict:
    """Per phase: forward and backward milliseconds and the ranges seen, from a profiled step's events."""
    marks = [e for e in events if e.name.startswith(PREFIX)]
    out = {p: {"forward_ms": 0.0, "backward_ms": 0.0} for p in PHASES}
    if not marks:
        return out
    thread = marks[0].thread
    ranges = sorted((e.time_range.start, e.time_range.end, e.name[len(PREFIX) :]) for e in marks)
    for start, end, phase in ranges:
        out[phase]["forward_ms"] += (end - start) / 1e3
    phase_of = _phase_of_sequence(events, thread, ranges)
    for event in events:
        if event.thread == thread and event.name.startswith(EVALUATE) and event.sequence_nr in phase_of:
            if not _inside_evaluate(event):  # a reentrant backward's nested nodes count in their outer node
                out[phase_of[event.sequence_nr]]["backward_ms"] += event.time_range.elapsed_us() / 1e3
    return out


def _inside_evaluate(event) -> bool:
    parent = event.cpu_parent
    while parent is not None:
        if parent.name.startswith(EVALUATE):
            return True
        parent = parent.cpu_parent
    return False


class ProfiledStep:
    """One training step of ``model`` under the profiler with the phase ranges installed: ``start()`` before it,
    ``stop()`` after it returns ``{"profiled_step_ms", "phases": {phase: {forward_ms, backward_ms, ranges}},
    "routing_calls", "tokens_per_call", "experts"}``."""

    def __init__(self, model: nn.Module) -> None:
        self.model = model

    def start(self) -> None:
        from torch.profiler import ProfilerActivity, profile

        self.inst = install(self.model)
        self.profiler = profile(activities=[ProfilerActivity.CPU])
        self.profiler.__enter__()
        self.clock = time.perf_counter()

    def stop(self) -> dict:
        step_ms = 1e3 * (time.perf_counter() - self.clock)
        self.profiler.__exit__(None, None, None)
        self.inst.remove()
        phases = split_from_events(list(self.profiler.events()))
        for phase, numbers in phases.items():
            numbers["ranges"] = self.inst.ranges.seen[phase]
        calls = self.inst.calls
        return {
            "profiled_step_ms": step_ms,
            "phases": phases,
            "routing_calls": len(calls),
            "tokens_per_call": sum(c["tokens"] for c in calls) / len(calls) if calls else None,
            "experts": sorted({c["experts"] for c in calls}),
        }
