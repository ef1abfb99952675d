"""``leaderboard/task_speed.md``: every task's training step, MoE method vs dense twin, rendered from the records of
``zoo bench tasks`` only: for each task and regime, the newest record that ran the regime (an idle run and a later
contended run are both shown); a task without one says so.

Targets (issue 62): the MoE step is at most ``TARGET_RATIO`` times its twin's on idle cores; a task whose steps advance
an environment (its records carry environment steps: the RL agents) is judged instead on environment steps per
second, at least ``TARGET_ENV_SHARE`` of its twin's. Judged with ``zoo.bench.claims`` over runs, not over the steps of
one run: each run of the bench (one record) gives one value, the median of its interleaved pairs, and the runs are
every record of the task that measured the regime with the same code (source hash) on the same CPU kind. The pairs
of one run share that process and the machine's state while it ran, so they are not independent replicates: runs
are, as seeds are for a training result.

Where a task misses its target, the page states the bound its newest record measured: how much of the MoE step
routing, dispatch and combine take (and what the step would be without them), the expert GEMMs' share and, from the
task's FLOP-count record, whether the rest is the MoE model's arithmetic (more FLOPs than its twin) or the execution of
it (more time per FLOP).
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from zoo.bench.claims import claim, claims_table, no_record, provenance_line
from zoo.bench.contention import LABELS, REGIMES
from zoo.bench.phase_split import PHASES
from zoo.leaderboard.compare import TOO_FEW, different_kinds
from zoo.leaderboard.cpu_identity import IDENTITY_KEYS

TARGET_RATIO = 1.3
TARGET_ENV_SHARE = 0.8
OVERHEAD = ("routing", "dispatch", "combine")
PHASE_LABELS = {"routing": "routing", "dispatch": "dispatch", "experts": "expert GEMMs", "combine": "combine"}
INTRO = (
    "One training step of every task's benchmark config, its MoE method against its dense twin, on idle and "
    "contended cores. A step is forward, backward and optimiser step; each time is the median of interleaved steps "
    "in one process, and the MoE step's time is split into routing, dispatch, expert GEMMs and combine. MoE / twin is "
    "the median, over the interleaved pairs, of the MoE step's time over the twin's step on the same batch: where "
    "batches differ in cost (WestWorld's robots differ in size) it can differ from the ratio of the two median times, "
    "which come from different batches."
)
METHOD = (
    "How (`zoo bench tasks`, `zoo.bench.tasks`): each task's first declared dense twin (`TaskSpec.dense_twins`) on the "
    "first dataset both have a benchmark row for, built from the rows' configs and overrides as `zoo fit` builds them, "
    "on the real data. Both models' `trainer.fit` run in one process and take turns step by step "
    "(`zoo.bench.step_clock`); a step is Lightning's `on_train_batch_start` to `on_train_batch_end` (under manual "
    "optimisation, the RL agents, the whole agent step: acting in the environment and the updates). Steps that train "
    "nothing (an agent filling its buffer) and the warm-up steps are not timed. The split comes from further steps "
    "under `torch.profiler`, the mixture parts bracketed from outside `zoo.moe` (`zoo.bench.phase_split`: forward "
    "ranges, backward nodes by sequence number; 'expert GEMMs' is the experts' whole computation, their GEMMs and what "
    "runs between them); its shares are of the profiled step, which the profiler slows (its step time is in the "
    'records); "—": the instrumentation saw no such part (e.g. experts computed inline by the task).'
)


RUNS_NOTE = (
    "Here n counts runs, not pairs: each run of `zoo bench tasks` (one record) gives one value, the median of its "
    "interleaved pairs, and a task is judged over every run that measured it idle with the code of its newest record "
    "(its source hash) on the same CPU kind; ours is the median over those runs. The pairs of one run share its "
    "process and the machine's state while it ran, so runs, not pairs, are the replicates (as seeds are for a training "
    "result)."
)
FLOPS = "flops"  # zoo bench tasks' counting pseudo-regime (``zoo.bench.tasks.FLOPS``)
FLOP_METHOD = (
    "Counted by `zoo bench tasks --regimes flops` (`zoo.bench.flop_step`): one training step of each model after the "
    "warm-up, PyTorch's FLOP formulas (`torch.utils.flop_counter`) applied to its every ATen call (matrix products, "
    "convolutions and attention, forward and backward; "
    "element-wise work and environment simulation are not counted). Counts do not depend on the machine or its load. "
    "Time per FLOP = the step-time ratio / the FLOP ratio: near 1 the MoE model runs its arithmetic as fast as the "
    "twin does, and the step ratio is the work ratio. ATen calls: every operation the step issues, with or without a "
    "FLOP formula (each pays a fixed cost, whatever its size; an expert segment's GEMM counts as one), and FLOPs per "
    "call, the mean size of one."
)

Entry = tuple[Path, dict]  # a record file and its record


def step_ratio(numbers: dict) -> float:
    """MoE step / twin step: the median of the interleaved pairs' ratios (each pair ran the same batch), or, for a
    record without pairs, the ratio of the two median times."""
    pairs = numbers.get("pair_ratios")
    return statistics.median(pairs) if pairs else numbers["ratio"]


def record_regimes(record: dict) -> list[str]:
    """The regimes a record ran: those it asked for (``settings.regimes``) and those it holds numbers of."""
    asked = (record.get("settings") or {}).get("regimes") or []
    return list(dict.fromkeys([*asked, *(record.get("regimes") or {})]))


def bench_records(folder: Path) -> list[Entry]:
    """Every ``zoo bench tasks`` record of a task in ``folder``, by file name."""
    entries = (
        [(path, json.loads(path.read_text())) for path in sorted(folder.glob("*.json"))] if folder.is_dir() else []
    )
    return [(path, record) for path, record in entries if record.get("bench") == "tasks" and record.get("task")]


def newest_records(folder: Path) -> dict[tuple[str, str], Entry]:
    """(task, regime) -> (file, record): for each regime a task ran in, the newest (by ``date``, then file name)
    ``zoo bench tasks`` record that ran it."""
    found: dict[tuple[str, str], Entry] = {}
    for path, record in bench_records(folder):
        for regime in record_regimes(record):
            held = found.get((record["task"], regime))
            if held is None or (record.get("date", ""), path.name) >= (held[1].get("date", ""), held[0].name):
                found[(record["task"], regime)] = (path, record)
    return found


def _cpu_kind(record: dict) -> dict[str, str]:
    machine = record.get("machine") or {}
    return {k: str(machine[k]) for k in IDENTITY_KEYS if machine.get(k)}


def runs_of(judged: dict, entries: list[Entry]) -> list[Entry]:
    """The runs a task's target is judged over: every record of ``entries`` (``bench_records``) of ``judged``'s task
    that measured its judged regime with its source hash on its CPU kind (``zoo.leaderboard.compare``'s keys, each as
    both name it), ``judged`` among them; oldest first."""
    regime = judged_regime(judged)
    runs = [
        (path, record)
        for path, record in entries
        if record["task"] == judged.get("task")
        and ((record.get("regimes") or {}).get(regime) or {}).get("status") == "measured"
        and record.get("source_hash") == judged.get("source_hash")
        and not different_kinds(_cpu_kind(record), _cpu_kind(judged))
    ]
    return sorted(runs, key=lambda entry: (entry[1].get("date", ""), entry[0].name))


def judged_entry(records: dict[tuple[str, str], Entry], task: str) -> Entry | None:
    """The task's record its target is judged on: the newest of the first idle regime it was measured in, else its
    newest idle record (which says why it was not measured), else None."""
    idle = [records[(task, r)] for r in REGIMES if r.startswith("idle") and (task, r) in records]
    measured = [e for e in idle if judged_regime(e[1]) is not None]
    return (measured or idle or [None])[0]


def _ms(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value:.0f}" if value >= 100 else f"{value:.1f}" if value >= 10 else f"{value:.2f}"


def _share(split: dict | None, phase: str) -> str:
    if not split or not split["phases"][phase]["ranges"]:
        return "—"
    p = split["phases"][phase]
    return f"{100 * (p['forward_ms'] + p['backward_ms']) / split['profiled_step_ms']:.0f} %"


def _env(numbers: dict) -> str:
    moe, dense = numbers["moe"].get("median_env_steps_per_s"), numbers["dense"].get("median_env_steps_per_s")
    if moe is None or dense is None:
        return "—"
    return f"{moe:.0f} / {dense:.0f} ({numbers['env_share']:.2f}×)"


def _pair(record: dict) -> str:
    pair = record.get("pair") or {}
    if not pair:
        return "—"
    return f"{pair['moe']['method']} vs {pair['dense']['method']} ({pair['moe']['dataset']})"


def table_row(task: str, record: dict | None, regime: str) -> str:
    """One task's row of a regime's table (a one-line reason where it was not measured)."""
    blank = " — |" * 9
    if record is None:
        return f"| {task} | no benchmark record |{blank}"
    numbers = (record.get("regimes") or {}).get(regime)
    if record.get("status") != "measured" or not numbers or numbers.get("status") != "measured":
        why = (numbers or {}).get("reason") or record.get("reason") or "not run in this regime"
        return f"| {task} | {record.get('status', '?')}: {why} |{blank}"
    moe, dense = numbers["moe"], numbers["dense"]
    split = moe.get("split")
    tokens = split.get("tokens_per_call") if split else None
    shares = " | ".join(_share(split, phase) for phase in PHASES)
    ratio = step_ratio(numbers)
    return (
        f"| {task} | {_pair(record)} | {_ms(moe['median_ms'])} | {_ms(dense['median_ms'])} | {ratio:.2f}× | "
        f"{_env(numbers)} | {shares} | {'—' if tokens is None else f'{tokens:.0f}'} |"
    )


def regime_table(regime: str, records: dict, tasks: list[str]) -> list[str]:
    """A regime's section: one row per task."""
    head = " | ".join(PHASE_LABELS[p] for p in PHASES)
    return [
        f"## {LABELS.get(regime, regime)}",
        "",
        "| task | MoE method vs dense twin (dataset) | MoE ms | twin ms | MoE / twin | env steps/s MoE / twin | "
        f"{head} | tokens per routing call |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        *(table_row(t, records.get((t, regime), (None, None))[1], regime) for t in tasks),
        "",
    ]


def judged_regime(record: dict) -> str | None:
    """The regime the target is judged in: the first idle regime the record measured."""
    for regime in REGIMES:
        numbers = (record.get("regimes") or {}).get(regime)
        if regime.startswith("idle") and numbers and numbers.get("status") == "measured":
            return regime
    return None


def run_values(runs: list[dict], regime: str) -> list[float]:
    """One value per run: its env-steps/s share (agents) or its step ratio (the median of its pairs)."""
    numbers = [run["regimes"][regime] for run in runs]
    return [n["env_share"] if "env_share" in n else step_ratio(n) for n in numbers]


def judged_value(runs: list[dict], regime: str) -> float:
    """The value the Targets row shows: the median over the runs."""
    return statistics.median(run_values(runs, regime))


def verdict(task: str, record: dict | None, runs: list[dict] | None = None):
    """The task's target row (``zoo.bench.claims``): step ratio ≤ 1.3× idle, or env steps/s ≥ 0.8× for agents,
    judged over ``runs`` (``runs_of``; default: ``record`` alone, which is too few to judge), one value per run."""
    regime = judged_regime(record) if record else None
    if record is None or regime is None:
        reason = "no benchmark record" if record is None else f"not measured idle: {record.get('reason', '?')}"
        return no_record(f"MoE / twin step ≤ {TARGET_RATIO}× idle", task, reason)
    runs = runs or [record]
    values, shown = run_values(runs, regime), f"{judged_value(runs, regime):.2f}×"
    if "env_share" in record["regimes"][regime]:
        target = f"env steps/s ≥ {TARGET_ENV_SHARE}× the twin's ({regime})"
        return claim(target, task, shown, [share - TARGET_ENV_SHARE for share in values])
    return claim(f"MoE / twin step ≤ {TARGET_RATIO}× ({regime})", task, shown, [TARGET_RATIO - r for r in values])


def _flop_numbers(flops: dict | None) -> dict | None:
    """A task's measured ``flops`` pseudo-regime (``zoo bench tasks --regimes flops``), or None."""
    numbers = ((flops or {}).get("regimes") or {}).get(FLOPS)
    return numbers if numbers and numbers.get("status") == "measured" and numbers.get("flop_ratio") else None


def _arithmetic(numbers: dict, flops: dict | None, env: bool) -> str | None:
    """The bound's last clause from the task's FLOP count: the MoE model's arithmetic, or the execution of it."""
    counted = _flop_numbers(flops)
    if counted is None:
        return None
    work, time_ratio = counted["flop_ratio"], step_ratio(numbers)
    per_flop = time_ratio / work
    if (1 / work < TARGET_ENV_SHARE) if env else (work > TARGET_RATIO):
        return (
            f"the bound is the MoE model's arithmetic: it does {work:.2f}× its twin's FLOPs per step, at "
            f"{per_flop:.2f}× the twin's time per FLOP."
        )
    calls = counted.get("call_ratio")
    issued = (
        f"it issues {calls:.2f}× the twin's ATen calls per step, of {_per_call(counted['moe'])} FLOPs on average "
        f"against the twin's {_per_call(counted['dense'])}"
        if calls
        else "small operations, whose fixed costs the twin's fewer, larger ones do not pay"
    )
    return (
        f"the bound is the execution of its work, not the arithmetic: it does {work:.2f}× its twin's FLOPs per step "
        f"but takes {per_flop:.2f}× the twin's time per FLOP ({issued})."
    )


def _per_call(model: dict) -> str:
    """One model's mean FLOPs per ATen call, e.g. '41 k'."""
    per = model["flops"] / model["calls"]
    return f"{per / 1e6:.3g} M" if per >= 1e6 else f"{per / 1e3:.3g} k"


def _tie_line(task: str, regime: str, value: float, runs: int, flops: dict | None, env: bool) -> str:
    """A task whose median is within the bar but whose interval over its runs holds it: not shown, and why it is
    close."""
    ours = f"env steps/s {value:.2f}× the twin's" if env else f"{value:.2f}× the twin's step"
    bar = f"≥ {TARGET_ENV_SHARE}×" if env else f"≤ {TARGET_RATIO}×"
    text = (
        f"- **{task}** ({ours}, median of {runs} runs, {regime}): its median is {bar}, but the 95 % interval of its "
        f"{runs} runs holds the bar, so the target is not shown (more runs can narrow the interval)"
    )
    counted = _flop_numbers(flops)
    if counted is None:
        return text + "."
    work = counted["flop_ratio"]
    return text + (f"; it does {work:.2f}× its twin's FLOPs per step, at {value / work:.2f}× the twin's time per FLOP.")


def _runs_phrase(value: float, runs: int, env: bool) -> str:
    what = "env steps/s" if env else "step"
    return f"{value:.2f}× the twin's {what}, median of {runs} runs"


def bound_line(task: str, record: dict, flops: dict | None = None, runs: list[dict] | None = None) -> str | None:
    """For a task whose idle target is judged over ``runs`` and not met (missed, or a tie: its interval holds the bar):
    the bound its newest record measured, in one sentence (``flops``: the task's FLOP-count record, which tells its
    arithmetic from the execution of it)."""
    regime = judged_regime(record)
    runs = runs or [record]
    judged = verdict(task, record, runs) if regime else None
    if judged is None or judged.met or judged.comparison.outcome == TOO_FEW:
        return None  # met, or too few runs to judge (the Targets row says so)
    numbers = record["regimes"][regime]
    env, value = "env_share" in numbers, judged_value(runs, regime)
    if (value >= TARGET_ENV_SHARE) if env else (value <= TARGET_RATIO):
        return _tie_line(task, regime, value, len(runs), flops, env)
    ratio = step_ratio(numbers)
    split = numbers["moe"].get("split")
    if not split:
        return f"- **{task}**: {ratio:.2f}× ({regime}); no phase split was measured."
    step = split["profiled_step_ms"]
    phases = split["phases"]
    overhead = sum(phases[p]["forward_ms"] + phases[p]["backward_ms"] for p in OVERHEAD) / step
    gemms = (phases["experts"]["forward_ms"] + phases["experts"]["backward_ms"]) / step
    unseen = [PHASE_LABELS[p] for p in PHASES if not phases[p]["ranges"]]
    without = ratio * (1 - overhead)  # the step ratio with the profiled overhead share taken out
    calls = (
        f"{split['routing_calls']} routing call(s) of {split['tokens_per_call']:.0f} tokens on average"
        if (split.get("tokens_per_call"))
        else "no zoo.moe router call seen"
    )
    text = (
        f"- **{task}** ({_runs_phrase(value, len(runs), env)}; its newest run, whose split this is: {ratio:.2f}× the "
        f"twin's step, {regime}): routing + dispatch + combine take "
        f"{overhead:.0%} of the profiled MoE step ({calls}), the expert GEMMs {gemms:.0%}"
        + (f" (not seen: {', '.join(unseen)})" if unseen else "")
        + f"; without routing, dispatch and combine the step would be {without:.2f}× the twin's: "
    )
    if (1 / without >= TARGET_ENV_SHARE) if env else (without <= TARGET_RATIO):
        return text + "the bound is that per-step overhead (sorting, gathers, scatters, small per-expert launches)."
    arithmetic = _arithmetic(numbers, flops, env)
    if arithmetic:
        return text + arithmetic
    rest = max(0.0, 1 - overhead - gemms)
    return text + (
        f"the bound is not the mixture's overhead but the MoE model's own work per step (expert GEMMs {gemms:.0%}, "
        f"the rest of its step {rest:.0%}), more than its twin's."
    )


def _gflop(flops: int) -> str:
    return f"{flops / 1e9:.3g}"


def flop_table(flops: dict, judged: dict, tasks: list[str]) -> list[str]:
    """FLOPs of one training step, MoE vs twin, beside the idle time ratio (tasks with a FLOP-count record)."""
    rows = []
    for task in tasks:
        counted = _flop_numbers(flops[task])
        if counted is None:
            continue
        regime = judged[task] and judged_regime(judged[task][1])
        ratio = step_ratio(judged[task][1]["regimes"][regime]) if regime else None
        time_cells = f"{ratio:.2f}× | {ratio / counted['flop_ratio']:.2f}×" if ratio else "— | —"
        moe, dense = counted["moe"], counted["dense"]
        call_cells = (
            f"{moe['calls']:,} | {dense['calls']:,} | {_per_call(moe)} | {_per_call(dense)}"
            if counted.get("call_ratio")
            else "— | — | — | —"
        )
        rows.append(
            f"| {task} | {_gflop(moe['flops'])} | {_gflop(dense['flops'])} | "
            f"{counted['flop_ratio']:.2f}× | {time_cells} | {call_cells} |"
        )
    if not rows:
        return []
    return [
        "## FLOPs per training step",
        "",
        FLOP_METHOD,
        "",
        "| task | MoE GFLOP | twin GFLOP | FLOPs MoE / twin | step time MoE / twin (idle) | time per FLOP MoE / twin "
        "| MoE ATen calls | twin ATen calls | MoE FLOPs per call | twin FLOPs per call |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        *rows,
        "",
    ]


def render_page(records: dict[tuple[str, str], Entry], tasks: list[str], page_dir: Path) -> str:
    """The page, from ``records`` (``newest_records``) alone; ``tasks``: every registered task (one row each)."""
    tasks = sorted(set(tasks) | {task for task, _ in records})
    regimes = [r for r in REGIMES if any(regime == r for _, regime in records)] or ["idle-unset", "contended-unset"]
    lines = ["# Task speed: MoE method vs dense twin, one training step (`zoo bench tasks`)", "", INTRO, "", METHOD, ""]
    for regime in regimes:
        lines += regime_table(regime, records, tasks)
    judged = {t: judged_entry(records, t) for t in tasks}
    folders = {path.parent for path, _ in records.values()}
    every = [entry for folder in sorted(folders) for entry in bench_records(folder)]  # read once for every task
    run_entries = {t: runs_of(judged[t][1], every) if judged[t] else [] for t in tasks}
    runs = {t: [record for _, record in run_entries[t]] for t in tasks}
    verdicts = [verdict(t, judged[t] and judged[t][1], runs[t]) for t in tasks]
    lines += ["## Targets", "", RUNS_NOTE, "", *claims_table(verdicts), ""]
    flops = {t: records.get((t, FLOPS), (None, None))[1] for t in tasks}
    lines += flop_table(flops, judged, tasks)
    bounds = [b for t in tasks if judged[t] for b in [bound_line(t, judged[t][1], flops[t], runs[t])] if b]
    lines += ["## Measured bounds", ""]
    lines += bounds or ["No task measured idle misses its target."]
    lines += ["", "## Records", ""]
    for task in tasks:
        used = {path: record for (t, _), (path, record) in sorted(records.items()) if t == task}
        used |= {path: record for path, record in run_entries[task]}  # the runs its target is judged over
        lines += [f"- {task}: {provenance_line(path, record, leaderboard=page_dir)}" for path, record in used.items()]
        if not used:
            lines.append(f"- {task}: no benchmark record; `zoo bench tasks --task {task} --leaderboard` writes one.")
    return "\n".join(lines) + "\n"
