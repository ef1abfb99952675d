"""``leaderboard/expert_parallel.md``: benchmark rows trained expert-parallel (``zoo.distributed.row_run``) beside
the one-process records they repeat, compared by the project's rule (``zoo.leaderboard.compare``).

    python -m zoo.distributed.page            # rewrite the page from leaderboard/results/expert_parallel/
    python -m zoo.distributed.page --check    # exit 1 when the page differs from what the records give

Every number comes from a record: the expert-parallel records name their one-process reference record
(``extra.reference.record``), the task spec of the reference gives the metrics and their direction.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

from zoo.distributed.row_run import FOLDER
from zoo.leaderboard.compare import cpu_note, paired, t_comparison
from zoo.leaderboard.record import RunRecord, read_record, read_records
from zoo.registry import TaskSpec, get_task, repository_root

PAGE = "expert_parallel.md"
MATRIX_TASK = "router_matrix"  # a router-matrix record's dataset is the task it ran

EXPECTED = (
    "What to expect. With the same global batch, the same data order and the same random draws, an expert-parallel "
    "run computes what one process computes, up to the order of float reductions: "
    "`tests/foundation/test_expert_parallel_strategy.py` trains the toy task (SGD, no shuffling, no dropout) at "
    "world 2 and at world 1 and finds the validation loss within 1e-4 and every tensor of the last checkpoint "
    "within 1e-5. A benchmark row is not in that regime: at world P Lightning's distributed sampler shuffles with "
    "its own generator (each process reads every P-th sample of its permutation), so a step's global batch holds "
    "other samples than the one-process run's step; each process draws its own dropout masks and router noise for "
    "its share; and a validation value that the task logs without `sync_dist` is each process's own share (the "
    "best checkpoint is kept when every process's value improved). The global batch size, the data, the epochs, "
    "the seeds and the test are the same. So the two sides differ as two runs with another data order do, and the "
    "expected verdict is a tie, not equal numbers."
)


def spec_of(reference: RunRecord) -> TaskSpec:
    """The task whose model the reference trained (a router-matrix record names it as its dataset)."""
    return get_task(reference.dataset if reference.task == MATRIX_TASK else reference.task)


def reference_of(record: RunRecord, repo: Path) -> RunRecord:
    return read_record(repo / record.extra["reference"]["record"])


def side(values: list[float]) -> str:
    """``mean ± half-width of its 95 % t-interval (n)`` of one side's runs."""
    c = t_comparison(values)
    low, high = c.interval
    return f"{c.mean:.4f} ± {(high - low) / 2:.4f} ({c.n})" if c.n > 1 else f"{c.mean:.4f} ({c.n})"


def _by_run(records: list[RunRecord], metric: str) -> dict:
    return {(r.seed, r.fold): r.metrics[metric] for r in records if metric in r.metrics}


def metric_table(ours: list[RunRecord], refs: list[RunRecord], spec: TaskSpec, label: str) -> list[str]:
    """Per metric: each side's mean and interval, the paired difference and the rule's verdict."""
    lines = [
        f"| metric | one process | {label} | {label} − one process, paired [95 % interval] | verdict |",
        "|---|---|---|---|---|",
    ]
    note = cpu_note(ours, refs)
    for metric in spec.metrics:
        a, b = _by_run(ours, metric), _by_run(refs, metric)
        higher = metric in spec.higher_is_better
        arrow = "↑" if higher else "↓"
        difference = paired(a, b, True).delta()  # raw difference, whatever the metric's direction
        verdict = paired(a, b, higher, note=note).verdict
        lines.append(
            f"| {metric} {arrow} | {side(list(b.values()))} | {side(list(a.values()))} | {difference} | {verdict} |"
        )
    return lines


def seed_table(ours: list[RunRecord], refs: list[RunRecord], metric: str, label: str) -> list[str]:
    """One line per (seed, fold): the metric and the wall time of each side."""
    theirs = {(r.seed, r.fold): r for r in refs}
    lines = [
        f"| seed | fold | {metric}, one process | {metric}, {label} | wall s, one process | wall s, {label} "
        "(fit + test) |",
        "|---|---|---|---|---|---|",
    ]
    for r in sorted(ours, key=lambda r: (r.seed, r.fold or 0)):
        ref = theirs[(r.seed, r.fold)]
        ep = r.extra["expert_parallel"]
        fold = "—" if r.fold is None else r.fold
        lines.append(
            f"| {r.seed} | {fold} | {ref.metrics[metric]:.4f} | {r.metrics[metric]:.4f} | {ref.wall_time_s:.0f} | "
            f"{r.wall_time_s:.0f} ({ep['fit_wall_time_s']:.0f} + {ep['test_wall_time_s']:.0f}) |"
        )
    return lines


def _closure_changes(config: dict, old: str, new: str, repo: Path) -> str:
    """The files of the code closure of a run of ``config`` that changed between commits ``old`` and ``new``, by
    ``git diff``."""
    from zoo.code_closure import run_sources

    paths = [str(p.relative_to(repo)) for p in run_sources(config).values() if repo in p.parents]
    try:
        out = subprocess.run(["git", "diff", "--name-only", old, new, "--", *paths], cwd=repo, capture_output=True)
    except OSError:
        return "unknown (no git)"
    if out.returncode:
        return f"unknown (git cannot compare {old[:8]} and {new[:8]})"
    changed = out.stdout.decode().split()
    return ", ".join(f"`{f}`" for f in changed) if changed else "none"


def _hash_note(ref, first) -> str:
    """Why the two source hashes are equal or not: the world-P config names the strategy (``zoo.distributed``)."""
    if ref.source_hash == first.source_hash:
        return "equal: the one-process run's driver already imports `zoo.distributed`, which the strategy adds"
    return "its closure adds `zoo.distributed`"


def code_changes(reference: RunRecord, ours: RunRecord, repo: Path) -> str:
    """The files of the reference run's code closure that changed between the reference's code (its last
    re-verification, else its commit) and the commit the expert-parallel run was made at."""
    old = reference.verified[-1]["to_commit"] if reference.verified else reference.commit
    return _closure_changes(reference.config, old, ours.commit.removesuffix("+dirty"), repo)


def changes_since(record: RunRecord, repo: Path) -> str:
    """The files of ``record``'s code closure that changed between its commit and HEAD."""
    return _closure_changes(record.config, record.commit.removesuffix("+dirty"), "HEAD", repo)


def _intro(ours: list[RunRecord], ref: RunRecord, label: str) -> str:
    ep = ours[0].extra["expert_parallel"]
    names = ", ".join(f"`{Path(r.extra['reference']['record']).name}`" for r in ours)
    return (
        f"One process: `{ref.task}` records {names} (batch {ep['global_batch']}). {label.capitalize()}: "
        f"`{FOLDER}` records `{ours[0].method}`, `zoo fit` with `--trainer.strategy "
        f"zoo.distributed.ExpertParallelStrategy --trainer.strategy.ep_size {ep['ep_size']}`, "
        f"{ep['per_process_batch']} per process (global batch {ep['global_batch']}), then tested at world 1 with the "
        "reference's config on the checkpoint its protocol tests. Means ± the half-width of their 95 % t-interval "
        "(n runs); the difference is paired by seed and fold, and the verdict is `zoo.leaderboard.compare`'s rule in "
        "the metric's direction."
    )


def _wall_note(ours: list[RunRecord], refs: list[RunRecord]) -> str:
    ep, ref = ours[0].extra["expert_parallel"], refs[0]
    loads = ", ".join(f"{r.extra['expert_parallel']['load_average_1min_at_start']:.1f}" for r in ours)
    fits = [r.extra["expert_parallel"]["fit_wall_time_s"] for r in ours]
    return (
        f"Mean wall time per run: one process {sum(r.wall_time_s for r in refs) / len(refs):.0f} s (fit and test), "
        f"world {ep['world_size']} {sum(r.wall_time_s for r in ours) / len(ours):.0f} s (of which the fit "
        f"{sum(fits) / len(fits):.0f} s). "
        f"These are not a speed comparison: each expert-parallel run's {ep['world_size']} processes "
        f"({ours[0].machine['torch_threads']} torch thread each; one process: {ref.machine.get('torch_threads', '?')}) "
        f"shared the machine's {ours[0].machine['cores']} cores with other work (1-minute load average when each "
        f"run started: {loads})."
    )


def section(ours: list[RunRecord], repo: Path) -> list[str]:
    """One expert-parallel cell (a method at one world size, one dataset) against its references."""
    refs = [reference_of(r, repo) for r in ours]
    first, ref = ours[0], refs[0]
    spec = spec_of(ref)
    ep = first.extra["expert_parallel"]
    label = f"world {ep['world_size']} (ep {ep['ep_size']})"
    row = ref.extra.get("row", f"{ref.method}/{ref.dataset}")
    where = "router × task table" if ref.task == MATRIX_TASK else f"{ref.task} benchmark"
    return [
        f"## {spec.name}: {row}, {ref.method} ({where}) at {label}",
        "",
        _intro(ours, ref, label),
        "",
        *metric_table(ours, refs, spec, label),
        "",
        *seed_table(ours, refs, spec.metrics[0], label),
        "",
        _wall_note(ours, refs),
        "",
        f"Code: files of the one-process run's closure changed since its records were made or last re-verified: "
        f"{code_changes(ref, first, repo)}. Source hashes: one process `{ref.source_hash[:12]}`, {label} "
        f"`{first.source_hash[:12]}` ({_hash_note(ref, first)}). Files of the {label} records' closure "
        f"changed between their commit and HEAD (not re-verified since: a change there may change their numbers): "
        f"{changes_since(first, repo)}.",
        "",
    ]


def render(repo: Path | None = None) -> str:
    """The page from the records under ``leaderboard/results/expert_parallel/``."""
    repo = repo or repository_root()
    cells: dict[tuple[str, str], list[RunRecord]] = defaultdict(list)
    for record in read_records(FOLDER, repo / "leaderboard"):
        cells[(record.method, record.dataset)].append(record)
    lines = [
        "# Expert-parallel training beside one process",
        "",
        "Benchmark rows trained with their experts spread over several processes (`zoo.distributed`, see "
        "`docs/distributed.md`), each run beside the one-process record of the same row, "
        "seed and fold. Generated by `python -m zoo.distributed.page` from `results/expert_parallel/` (made by "
        "`python -m zoo.distributed.row_run`); no task page reads these records, so no task's table or verdict "
        "changes with them.",
        "",
        EXPECTED,
        "",
    ]
    for key in sorted(cells):
        lines += section(cells[key], repo)
    if not cells:
        lines += ["No records yet.", ""]
    return "\n".join(lines).rstrip("\n") + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m zoo.distributed.page", description=__doc__.split("\n\n")[0])
    p.add_argument("--check", action="store_true", help="exit 1 when the page is not what the records give")
    ns = p.parse_args(argv)
    path = repository_root() / "leaderboard" / PAGE
    text = render()
    if ns.check:
        same = path.exists() and path.read_text() == text
        print(f"{path}: {'up to date' if same else 'differs from its records; run python -m zoo.distributed.page'}")
        return 0 if same else 1
    path.write_text(text)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
