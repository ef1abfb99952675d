"""The ``parity`` fixture: load an upstream fixture, compare ours with it, and (under ``ZOO_PARITY_RECORD=1``) record
the comparison in ``leaderboard/results/fidelity/<fixture name>.json`` for ``python -m scripts.parity.render``.

    fx = parity.load("patchtst_backbone")                  # tests/fixtures/parity/patchtst_backbone.pt (or .npz)
    parity.compare("outputs", ours, fx["outputs"])           # rel max|Δ| <= 1e-5, else the test fails
    parity.compare("grad/w", ours_g, fx["grads"]["w"], tolerance=2e-5)
    parity.differs("loss/reduction", ours, theirs, at_least=1e-3, why="...")   # pins a known difference
    parity.describe(method="patchtst", task="seer", compared="forward, loss, gradients, one Adam step")

rel max|Δ| = max|ours - theirs| / max(max|theirs|, 1e-12), in float64 after casting both sides. Each test's items
and its ``describe`` form one comparison (a row of the page); a fixture's record holds all its comparisons of the
session (tests describing the same ``compared`` text merge into one)."""

from __future__ import annotations

import datetime
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "parity"
RECORDS = REPO / "leaderboard" / "results" / "fidelity"
DEFAULT_TOLERANCE = 1e-5
if str(REPO) not in sys.path:  # the tests import scripts.parity.* (a namespace package at the repo root)
    sys.path.insert(0, str(REPO))

_SESSION_RECORDS: dict[str, dict] = {}  # fixture name -> record, its comparisons merged over the session's tests


def as_array(value) -> np.ndarray:
    """A tensor, array or number as a float64 numpy array (detached, on CPU)."""
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu().double().numpy()
    return np.asarray(value, dtype=np.float64)


def relative_difference(ours, theirs) -> tuple[float, float]:
    """(max|ours - theirs|, that divided by max(max|theirs|, 1e-12)); shapes must match exactly."""
    a, b = as_array(ours), as_array(theirs)
    if a.shape != b.shape:
        raise AssertionError(f"shape differs: ours {a.shape}, theirs {b.shape}")
    if a.size == 0:
        return 0.0, 0.0
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        return float("inf"), float("inf")
    absolute = float(np.abs(a - b).max())
    return absolute, absolute / max(float(np.abs(b).max()), 1e-12)


def load_fixture(name: str) -> dict:
    """``tests/fixtures/parity/<name>.pt`` (torch.save of plain tensors, numbers and strings) or ``<name>.npz``
    (keys ``section/sub/...`` nested into dicts; ``meta`` is a JSON string)."""
    pt, npz = FIXTURES / f"{name}.pt", FIXTURES / f"{name}.npz"
    if pt.exists():
        return torch.load(pt, map_location="cpu", weights_only=True)
    if npz.exists():
        out: dict = {}
        with np.load(npz, allow_pickle=False) as data:
            for key in data.files:
                *parents, leaf = key.split("/")
                node = out
                for part in parents:
                    node = node.setdefault(part, {})
                node[leaf] = data[key]
        if "meta" in out:
            out["meta"] = json.loads(str(out["meta"]))
        return out
    raise FileNotFoundError(f"no parity fixture {name!r}: expected {pt} or {npz} (see scripts/parity/)")


def _provenance() -> dict:
    """Our commit (and whether the work tree differs from it), the machine's CPU model and the library versions."""

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True).stdout.strip()

    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "commit": git("rev-parse", "HEAD"),
        "dirty": bool(git("status", "--porcelain", "--untracked-files=no", "--", "zoo", "tasks")),
        "machine": cpu,
        "torch": torch.__version__,
        "numpy": np.__version__,
        "python": platform.python_version(),
    }


class Parity:
    """Per-test comparison helper. Each test's items and ``describe`` form one *comparison* of the fixture most
    recently ``load``-ed; ``finish`` merges them into that fixture's record (comparisons with the same
    ``compared`` text, e.g. parametrized tests, merge)."""

    def __init__(self, test_id: str):
        self.test_id = test_id
        self.name: str | None = None
        self.parts: dict[str, dict] = {}  # fixture name -> {"items": {...}, "methods", "task", "compared", "note"}

    def load(self, name: str) -> dict:
        """The fixture dict of ``name``; later ``compare``/``differs``/``describe`` calls belong to it."""
        fx = load_fixture(name)
        self.name = name
        meta = fx.get("meta", {})
        _SESSION_RECORDS.setdefault(name, {"fixture": name, "comparisons": {}}).update(
            upstream=meta.get("upstream", ""),
            upstream_commit=meta.get("commit", ""),
            call=meta.get("call", ""),
            exported_with=meta.get("exported_with", {}),
        )
        self.parts.setdefault(name, {"items": {}})
        return fx

    def _part(self) -> dict:
        if self.name is None:
            raise RuntimeError("parity.load(name) must come before compare/differs/describe")
        return self.parts[self.name]

    def compare(
        self, label: str, ours, theirs, tolerance: float = DEFAULT_TOLERANCE, scale: float | None = None
    ) -> float:
        """Assert rel max|Δ| of ``ours`` against ``theirs`` <= ``tolerance``; remember it. Returns the rel Δ.

        ``scale``: a floor for the denominator (max|Δ| / max(max|theirs|, scale)), for an item whose true value
        is 0 (e.g. a gradient that vanishes by symmetry): its difference is then measured against the size of
        the quantities around it. ``ZOO_PARITY_SOFT=1`` prints every item instead of failing (diagnosis only)."""
        absolute, relative = relative_difference(ours, theirs)
        if scale is not None and np.isfinite(relative):
            relative = absolute / max(float(np.abs(as_array(theirs)).max(initial=0.0)), scale, 1e-12)
        item = {"max_abs": absolute, "max_rel": relative, "tolerance": tolerance}
        if scale is not None:
            item["scale"] = scale
        self._part()["items"][label] = item
        if os.environ.get("ZOO_PARITY_SOFT") == "1":
            print(f"[parity] {self.name}: {label}: rel {relative:.3g} (tolerance {tolerance:g})")
            return relative
        assert relative <= tolerance, f"{label}: rel max|Δ| {relative:.3g} > {tolerance:g} (abs {absolute:.3g})"
        return relative

    def differs(self, label: str, ours, theirs, at_least: float, why: str) -> float:
        """Pin a known difference: assert rel max|Δ| >= ``at_least`` (so the test fails once it is fixed) and
        record it with ``why``; the page then says "differs" for this comparison, with the reason."""
        absolute, relative = relative_difference(ours, theirs)
        self._part()["items"][label] = {"max_abs": absolute, "max_rel": relative, "tolerance": None, "pinned": why}
        assert relative >= at_least, f"{label}: pinned difference gone (rel {relative:.3g} < {at_least:g}): {why}"
        return relative

    def describe(self, method: str | list[str], task: str, compared: str, note: str = "") -> None:
        """Name the zoo method(s) (as in scripts/parity/methods.yaml) and task this test checks, and what it
        compared (e.g. "forward, loss, gradients, one Adam step"); may come before or after the compares."""
        methods = [method] if isinstance(method, str) else list(method)
        self._part().update(methods=methods, task=task, compared=compared, note=note)

    def finish(self) -> list[dict]:
        """Merge this test's described comparisons into their fixtures' session records; returns those records."""
        touched = []
        for name, part in self.parts.items():
            if "compared" not in part:
                continue
            record = _SESSION_RECORDS[name]
            merged = record["comparisons"].setdefault(part["compared"], {"items": {}, "tests": []})
            merged.update({k: v for k, v in part.items() if k != "items"})
            merged["items"].update(part["items"])
            if self.test_id not in merged["tests"]:
                merged["tests"].append(self.test_id)
            touched.append(record)
        return touched


def verdict(items: dict) -> str:
    """ "equal" when every compared item is within its tolerance, else "differs"."""
    ok = all(i.get("tolerance") is not None and i["max_rel"] <= i["tolerance"] for i in items.values())
    return "equal" if ok else "differs"


def _write(record: dict) -> None:
    """``leaderboard/results/fidelity/<fixture>.json``: the fixture's upstream and call, its comparisons (each with
    items and verdict), an overall verdict, and our provenance."""
    RECORDS.mkdir(parents=True, exist_ok=True)
    comparisons = [dict(c, verdict=verdict(c["items"])) for c in record["comparisons"].values()]
    overall = "equal" if all(c["verdict"] == "equal" for c in comparisons) else "differs"
    out = dict(record, comparisons=comparisons, verdict=overall, ours=_provenance())
    out["recorded"] = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    (RECORDS / f"{record['fixture']}.json").write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Keep each phase's report on the test item, so the fixture knows whether the test body passed."""
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"parity_{report.when}", report)


@pytest.fixture
def parity(request):
    """The ``Parity`` helper of this test. Under ``ZOO_PARITY_RECORD=1`` its fixture's record is written after
    the test when the test passed, or when it failed on a compared item outside its tolerance (then "differs");
    a test that failed for any other reason writes nothing."""
    helper = Parity(request.node.nodeid)
    yield helper
    if os.environ.get("ZOO_PARITY_RECORD") != "1":
        return
    report = getattr(request.node, "parity_call", None)
    passed = report is not None and report.passed
    outside = any(verdict(part["items"]) == "differs" for part in helper.parts.values())
    if passed or outside:
        for record in helper.finish():
            _write(record)
