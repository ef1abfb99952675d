"""One regime's measurement of one task: its MoE row and dense twin built as ``zoo fit`` builds them, their training
steps timed in turn (``zoo.bench.step_clock``), summarised.

``summarise`` turns the clocks into the numbers a record keeps: per model every timed step (wall and CPU ms, and
environment steps where the module counts them), the medians, the parameters, the mean phase split of the profiled
steps (``zoo.bench.phase_split``); for the pair, ``ratio`` = median MoE step / median twin step, the ratio of each
interleaved pair of steps (``pair_ratios``, step i of each), and for agents that count environment steps their
env-steps-per-second share (MoE / twin, per pair and of the medians); ``overlaps``: timed or profiled steps of two
models that overlapped in time (0 when the steps ran in turn, as they must); ``order``: which model each timed or
profiled step belonged to, in time order.
"""

from __future__ import annotations

import statistics
from pathlib import Path

ROLES = ("moe", "dense")


def _mean_profile(profiles: list[dict]) -> dict | None:
    """The mean of several profiled steps' splits (so that the phases still sum to at most the step)."""
    if not profiles:
        return None
    n = len(profiles)
    phases = {}
    for phase, first in profiles[0]["phases"].items():
        phases[phase] = {
            "forward_ms": sum(p["phases"][phase]["forward_ms"] for p in profiles) / n,
            "backward_ms": sum(p["phases"][phase]["backward_ms"] for p in profiles) / n,
            "ranges": first["ranges"],
        }
    return {
        "steps": n,
        "profiled_step_ms": sum(p["profiled_step_ms"] for p in profiles) / n,
        "phases": phases,
        "routing_calls": profiles[0]["routing_calls"],
        "tokens_per_call": profiles[0]["tokens_per_call"],
        "experts": profiles[0]["experts"],
    }


def _model_numbers(clock, model) -> dict:
    """One model's numbers; medians and rates are computed from the rounded values the record keeps."""
    wall, cpu = [round(v, 3) for v in clock.wall_ms], [round(v, 3) for v in clock.cpu_ms]
    env_rates = [e / (w / 1e3) for e, w in zip(clock.env_steps, wall) if w > 0] if clock.env_steps else []
    return {
        "wall_ms": wall,
        "cpu_ms": cpu,
        "median_ms": statistics.median(wall) if wall else None,
        "median_cpu_ms": statistics.median(cpu) if cpu else None,
        "env_steps": clock.env_steps or None,
        "env_steps_per_s": env_rates or None,
        "median_env_steps_per_s": statistics.median(env_rates) if env_rates else None,
        "parameters": sum(p.numel() for p in model.parameters()),
        "trainable_parameters": sum(p.numel() for p in model.parameters() if p.requires_grad),
        "split": _mean_profile(clock.profiles),
    }


def overlaps(timeline: list[tuple[str, float, float]]) -> int:
    """How many steps of the timeline started before the previous one (of any model) ended."""
    ordered = sorted(timeline, key=lambda t: t[1])
    return sum(1 for a, b in zip(ordered, ordered[1:]) if b[1] < a[2])


def summarise(clocks: dict, models: dict, timeline: list) -> dict:
    """The record's numbers for one regime (see the module doc)."""
    out = {role: _model_numbers(clocks[role], models[role]) for role in ROLES}
    moe, dense = out["moe"], out["dense"]
    out["ratio"] = moe["median_ms"] / dense["median_ms"] if moe["median_ms"] and dense["median_ms"] else None
    out["pair_ratios"] = [m / d for m, d in zip(moe["wall_ms"], dense["wall_ms"]) if d > 0]
    if moe["env_steps_per_s"] and dense["env_steps_per_s"]:
        out["pair_env_shares"] = [m / d for m, d in zip(moe["env_steps_per_s"], dense["env_steps_per_s"]) if d > 0]
        out["env_share"] = moe["median_env_steps_per_s"] / dense["median_env_steps_per_s"]
    out["overlaps"] = overlaps(timeline)
    out["order"] = [role for role, _, _ in sorted(timeline, key=lambda t: t[1])]
    return out


def build(config: Path, overrides: list[str]):
    """The model, datamodule and trainer as ``zoo fit`` builds them (``ZooCLI(run=False)``, a quiet trainer)."""
    from zoo.trained import build as build_cli

    return build_cli(config, overrides)


def _run_pair(builds: dict[str, tuple[Path, list[str]]], warmup: int, repeats: int, probed: int, probe=None):
    """Build ``{"moe": (config, overrides), "dense": ...}`` and step them in turn (``zoo.bench.step_clock``):
    ``warmup`` steps, ``repeats`` timed, ``probed`` more under ``probe``. Returns ``(clis, clocks, timeline)``; a fit
    that raised is re-raised after both fits ended, and a fit that ended early is an error."""
    from zoo.bench.step_clock import run_in_turn
    from zoo.moe import segment_kernel

    segment_kernel.kernel()  # built or loaded before anything is timed
    clis = {role: build(*builds[role]) for role in ROLES}
    fits = {role: (cli.trainer, cli.model, cli.datamodule) for role, cli in clis.items()}
    clocks, errors, timeline = run_in_turn(fits, warmup, repeats, probed, probe=probe)
    if errors:
        role, error = next(iter(errors.items()))
        raise RuntimeError(f"the {role} fit failed: {type(error).__name__}: {error}") from error
    short = [role for role in ROLES if len(clocks[role].wall_ms) < repeats or len(clocks[role].profiles) < probed]
    if short:
        raise RuntimeError(f"the {' and '.join(short)} fit ended before {warmup + repeats + probed} training steps")
    return clis, clocks, timeline


def measure(builds: dict[str, tuple[Path, list[str]]], warmup: int, repeats: int, profiled: int) -> dict:
    """Time both models' steps in turn and summarise (see the module doc)."""
    clis, clocks, timeline = _run_pair(builds, warmup, repeats, profiled)
    return summarise(clocks, {role: cli.model for role, cli in clis.items()}, timeline)


def _ratio(a: float, b: float) -> float | None:
    return a / b if b else None


def count(builds: dict[str, tuple[Path, list[str]]], warmup: int) -> dict:
    """The FLOPs and ATen calls of one training step of each model after ``warmup`` (``zoo.bench.flop_step``), stepped
    in turn as ``measure`` steps them: ``{"moe": {"flops", "calls", "parameters", ...}, "dense": ..., "flop_ratio",
    "call_ratio"}``."""
    from zoo.bench.flop_step import CountedStep

    clis, clocks, _ = _run_pair(builds, warmup, 0, 1, probe=CountedStep)
    out = {}
    for role, cli in clis.items():
        params = list(cli.model.parameters())
        out[role] = {
            **clocks[role].profiles[0],
            "parameters": sum(p.numel() for p in params),
            "trainable_parameters": sum(p.numel() for p in params if p.requires_grad),
        }
    out["flop_ratio"] = _ratio(out["moe"]["flops"], out["dense"]["flops"])
    out["call_ratio"] = _ratio(out["moe"]["calls"], out["dense"]["calls"])
    return out
