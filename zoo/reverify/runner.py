"""Plan and run the re-verification of a task's stale records: which groups, probed at which commits, and what
each group's two probes decided."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from zoo.code_closure import closure, run_roots
from zoo.errors import ConfigError
from zoo.leaderboard.record import RunRecord, read_record
from zoo.registry import TaskSpec, load_object
from zoo.reverify.checkouts import Trees, commit_of, dirty_closure_files, package_roots
from zoo.reverify.groups import Group, group_records
from zoo.reverify.remembered import remembered_hash, worker_at, worker_id
from zoo.reverify.restamp import restamp, verified_entry
from zoo.reverify.workers import WorkerRun, run_worker, worker_script
from zoo.runner.stop_signal import stop_if_asked

# what a group's decision can be
RESTAMP, STALE, UNVERIFIABLE, DIRTY = "re-stamped", "stale", "cannot be verified", "uncommitted code"


@dataclass
class Decision:
    """A group and what happens to it: ``base`` is the commit probed as the records' code, ``head_hash`` the source
    hash HEAD gives its config; ``status`` one of RESTAMP / STALE (probes differ or failed) / UNVERIFIABLE (no
    commit holds its code) / DIRTY (its code at HEAD has uncommitted changes), ``reason`` says why."""

    group: Group
    head_hash: str
    base: str | None = None
    status: str = ""
    reason: str = ""
    probe_hash: str | None = None
    remembered: str | None = None  # the base probe's hash from the records' last verification (``remembered``)
    base_probed: bool = False  # the base was probed in this run (not only remembered)


@dataclass
class Plan:
    """The stale records of one task (``label``), grouped, with a base commit per group that can be probed."""

    label: str
    trees: Trees
    decisions: list[Decision]
    current: int  # records of the task already written by HEAD's code
    skipped: int  # stale records that re-verification cannot help (no fingerprint, or other settings)
    workers: list[WorkerRun] = field(default_factory=list)

    @property
    def probed(self) -> list[Decision]:
        return [d for d in self.decisions if d.base is not None and d.status in ("", RESTAMP, STALE)]

    def bases(self, decisions: list[Decision] | None = None) -> list[str]:
        """The record commits to probe for ``decisions`` (default: every probed group that remembers no base
        probe), most groups first."""
        count: dict[str, int] = {}
        for decision in [d for d in self.probed if d.remembered is None] if decisions is None else decisions:
            count[decision.base] = count.get(decision.base, 0) + 1
        return sorted(count, key=lambda c: -count[c])

    @property
    def probe_seconds(self) -> float:
        return sum(w.seconds for w in self.workers)

    def restamped(self) -> list[Decision]:
        return [d for d in self.decisions if d.status == RESTAMP]


def _base_commit(trees: Trees, group: Group, chosen: list[str]) -> str | None:
    """A commit whose tree gives the group's source hash (its closure is then byte-equal to the records' code):
    one ``chosen`` for another group already (one worker fewer), else the first of the group's own commits (its
    last re-verification's, then its run's)."""
    for commit in [*chosen, *group.commits()]:
        full = commit_of(trees.repo, commit)
        if full is None:
            continue
        try:
            if trees.source_hash(full, group.config) == group.source_hash:
                return full
        except ConfigError:
            continue
    return None


def _dirty_reason(trees: Trees, group: Group) -> str:
    files = closure(run_roots(group.config), package_roots(trees.repo)).values()
    dirty = dirty_closure_files(trees.repo, list(files))
    shown = ", ".join(dirty[:3]) + (f" and {len(dirty) - 3} more" if len(dirty) > 3 else "")
    return f"its code differs from HEAD in the working tree ({shown or 'files of its closure'}): commit it first"


def plan(
    label: str,
    records: list[tuple[Path, RunRecord]],
    repo: Path,
    work: Path | None = None,
    eligible: Callable[[RunRecord], bool] = lambda _: True,
    overrides: Callable[[RunRecord], dict[str, list[str]]] = lambda _: {},
) -> Plan:
    """Group the records of ``label`` whose ``source_hash`` differs from HEAD's for their config and that are
    ``eligible`` (e.g. their row's settings are unchanged); choose each group's base commit, or say why it has none
    or why HEAD cannot be probed for it (uncommitted changes in its closure). ``overrides`` gives a group's probe
    overrides from its first record (``spec_overrides``: ``{"short": [...], "every": [...]}``)."""
    trees = Trees(Path(repo), Path(work or tempfile.mkdtemp(prefix="zoo-reverify-")))
    head = trees.head
    stale, current, skipped = [], 0, 0
    for path, record in records:
        if record.source_hash and trees.source_hash(head, record.config or {}) == record.source_hash:
            current += 1
        elif record.source_hash and eligible(record):
            stale.append((path, record))
        else:
            skipped += 1
    decisions, chosen = [], []
    worker = worker_at(trees.repo, head)
    for group in group_records(label, stale):
        given = overrides(group.records[0])
        group.overrides, group.inputs = tuple(given.get("short", ())), tuple(given.get("every", ()))
        decision = Decision(group, trees.source_hash(head, group.config))
        if trees.working_hash(group.config) != decision.head_hash:
            decision.status, decision.reason = DIRTY, _dirty_reason(trees, group)
        elif (base := _base_commit(trees, group, chosen)) is None:
            decision.status = UNVERIFIABLE
            decision.reason = (
                f"no commit of its records ({', '.join(c[:10] for c in group.commits()) or 'none'}) holds the code "
                "of its source hash (written from uncommitted files?)"
            )
        else:
            decision.base = base
            decision.remembered = remembered_hash(trees.repo, group.records, group.source_hash, group.threads, worker)
            chosen += [] if base in chosen or decision.remembered else [base]
        decisions.append(decision)
    return Plan(label, trees, decisions, current, skipped)


def first_difference(a, b, path: str = "") -> str:
    """Where two probe values first differ, as a path (``short.test[0].test/acc``)."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            if key not in a or key not in b:
                return f"{path}.{key} (in one probe only)".lstrip(".")
            if a[key] != b[key]:
                return first_difference(a[key], b[key], f"{path}.{key}")
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"{path} (length {len(a)} vs {len(b)})".lstrip(".")
        for i, (x, y) in enumerate(zip(a, b)):
            if x != y:
                return first_difference(x, y, f"{path}[{i}]")
    return path.lstrip(".") or "the probe"


def _spec(decision: Decision) -> dict:
    group = decision.group
    return {
        "id": group.key,
        "config": group.config,
        "runs": group.runs,
        "threads": group.threads,
        "overrides": list(group.overrides),
        "inputs": list(group.inputs),
    }


def _decide(decision: Decision, old: dict | None, new: dict | None) -> None:
    if old is None or new is None:
        which = "HEAD" if new is None else "the record's commit"
        decision.status, decision.reason = STALE, f"no probe result from {which} (the worker stopped; see its log)"
    elif "error" in old or "error" in new:
        where, error = ("its commit", old["error"]) if "error" in old else ("HEAD", new["error"])
        decision.status, decision.reason = STALE, f"the probe failed at {where}: {error}"
    elif old["probe_hash"] != new["probe_hash"]:
        decision.status = STALE
        decision.reason = f"probes differ at {first_difference(old['probe'], new['probe'])}"
    else:
        decision.status, decision.probe_hash = RESTAMP, new["probe_hash"]


def execute(
    run_plan: Plan, say: Callable[[str], None] = print, timeout: float | None = None, known: dict | None = None
) -> Plan:
    """Probe every group of ``run_plan`` at HEAD and, unless it remembers its base probe (``remembered``), at its
    base commit (one worker process per commit); a group whose HEAD probe differs from the hash it remembers is
    probed at its base after all, to decide and to say where. Decide each group and re-stamp the records of those
    whose probes are identical. ``known`` (worker:commit -> group id -> result, filled here) holds probes made
    before: a probe is a function of the commit's code, the group and the worker script (part of the key), so a
    commit already probed for a group is not probed again."""
    trees, todo = run_plan.trees, run_plan.probed
    if not todo:
        return run_plan
    script = worker_script(trees)
    worker = worker_id(script.read_bytes())
    results: dict[str, dict[str, dict]] = {} if known is None else known

    def probe(commit: str, decisions: list[Decision]) -> None:
        done = results.setdefault(f"{worker}:{commit}", {})
        specs = [_spec(d) for d in decisions if d.group.key not in done]
        if not specs:
            return
        stop_if_asked(f"the probes of {commit[:10]}")  # SIGTERM: stop here; no record was re-stamped yet
        say(
            f"  probing {len(specs)} group{'s' if len(specs) != 1 else ''} with the code of {commit[:10]}"
            + (" (HEAD)" if commit == trees.head else "")
        )
        worker_run = run_worker(trees, commit, specs, script, timeout)
        run_plan.workers.append(worker_run)
        done.update(worker_run.results)
        if worker_run.returncode != 0:
            say(f"  the worker of {commit[:10]} exited with {worker_run.returncode}; its log: {worker_run.log}")

    def result(commit: str, decision: Decision) -> dict | None:
        return results.get(f"{worker}:{commit}", {}).get(decision.group.key)

    fresh = [d for d in todo if d.remembered is None]
    for commit in run_plan.bases(fresh):
        probe(commit, [d for d in fresh if d.base == commit])
    probe(trees.head, todo)
    differ = [d for d in todo if d.remembered and (result(trees.head, d) or {}).get("probe_hash") != d.remembered]
    differ = [d for d in differ if "error" not in (result(trees.head, d) or {"error": ""})]
    for commit in run_plan.bases(differ):
        probe(commit, [d for d in differ if d.base == commit])
    for decision in todo:
        old, new = result(decision.base, decision), result(trees.head, decision)
        decision.base_probed = old is not None
        if old is None and decision.remembered and (new or {}).get("probe_hash") == decision.remembered:
            old = new  # the remembered base probe is the same probe: see ``remembered``
        _decide(decision, old, new)
        if decision.status == RESTAMP:
            _restamp_group(decision, trees, worker)
    return run_plan


def _restamp_group(decision: Decision, trees: Trees, worker: str) -> None:
    group = decision.group
    entry = verified_entry(
        decision.base, group.source_hash, trees.head, decision.head_hash, group.threads, decision.probe_hash
    )
    entry.update(worker=worker, base_probe="probed" if decision.base_probed else "remembered")
    for path in group.paths:
        restamp(path, group.source_hash, entry)


def spec_overrides(spec_of: Callable[[RunRecord], TaskSpec]) -> Callable[[RunRecord], dict[str, list[str]]]:
    """A record's probe overrides, ``{"short": [...], "every": [...]}``: its task's ``probe_overrides`` function
    (``spec_of`` finds the task's spec) applied to the record's config; a list it returns is the short fit's, a dict
    may also name ``every`` (arguments of every part of the probe: stand-ins for another run's outputs, which the
    schedule trace needs as well). None when the task declares no function."""

    def overrides(record: RunRecord) -> dict[str, list[str]]:
        dotted = spec_of(record).probe_overrides
        given = load_object(dotted)(record.config or {}) if dotted else []
        given = given if isinstance(given, dict) else {"short": given}
        return {kind: [str(arg) for arg in given.get(kind, [])] for kind in ("short", "every")}

    return overrides


def read_pairs(paths: list[Path]) -> list[tuple[Path, RunRecord]]:
    """(path, record) of each record file."""
    return [(path, read_record(path)) for path in paths]
