"""The `parity` fixture's helper: compare fails beyond the tolerance, differs fails once a pinned difference is gone,
.npz fixtures load nested, and a record carries the upstream commit, the items, the verdict and our provenance."""

from __future__ import annotations

import json
import types

import numpy as np
import pytest
import torch


@pytest.fixture
def helper_module(parity, tmp_path, monkeypatch):
    """tests/parity/conftest.py as a module, with its fixture and record folders moved to tmp_path."""
    # the conftest's own globals: several folders have a conftest.py, so sys.modules["conftest"] may be another one
    module = type(parity).load.__globals__
    monkeypatch.setitem(module, "FIXTURES", tmp_path / "fixtures")
    monkeypatch.setitem(module, "RECORDS", tmp_path / "records")
    monkeypatch.setitem(module, "_SESSION_RECORDS", {})
    (tmp_path / "fixtures").mkdir()
    meta = json.dumps({"upstream": "owner/repo", "commit": "abc123", "call": "Model()(x)"})
    np.savez(tmp_path / "fixtures" / "toy.npz", meta=meta, outputs=np.ones(3), **{"grads/w": np.full((2, 2), 2.0)})
    return types.SimpleNamespace(**module)


def test_npz_fixture_loads_nested_with_its_meta(helper_module):
    fx = helper_module.Parity("t").load("toy")
    assert fx["meta"]["commit"] == "abc123" and fx["grads"]["w"].shape == (2, 2)


def test_compare_passes_within_and_fails_beyond_its_tolerance(helper_module):
    helper = helper_module.Parity("t")
    fx = helper.load("toy")
    assert helper.compare("outputs", torch.ones(3, dtype=torch.float64) + 5e-6, fx["outputs"]) == pytest.approx(5e-6)
    with pytest.raises(AssertionError, match="rel max"):
        helper.compare("outputs", torch.ones(3) + 2e-5, fx["outputs"])
    with pytest.raises(AssertionError, match="shape"):
        helper.compare("grads/w", torch.full((4,), 2.0), fx["grads"]["w"])
    with pytest.raises(AssertionError):
        helper.compare("outputs", torch.tensor([1.0, float("nan"), 1.0]), fx["outputs"])


def test_differs_fails_once_the_pinned_difference_is_gone(helper_module):
    helper = helper_module.Parity("t")
    fx = helper.load("toy")
    assert helper.differs("outputs", 1.1 * torch.ones(3), fx["outputs"], at_least=0.05, why="x") > 0.05
    with pytest.raises(AssertionError, match="pinned difference gone"):
        helper.differs("outputs", torch.ones(3), fx["outputs"], at_least=0.05, why="x")


def test_record_has_upstream_items_verdict_and_provenance(helper_module):
    helper = helper_module.Parity("test_toy")
    fx = helper.load("toy")
    helper.describe(method="patchtst", task="seer", compared="forward")
    helper.compare("outputs", fx["outputs"], fx["outputs"])
    with pytest.raises(AssertionError):
        helper.compare("grads/w", fx["grads"]["w"] * 1.01, fx["grads"]["w"])
    (merged,) = helper.finish()
    helper_module._write(merged)
    record = json.loads((helper_module.RECORDS / "toy.json").read_text())
    (comparison,) = record["comparisons"]
    assert (record["upstream"], record["upstream_commit"], comparison["methods"]) == (
        "owner/repo",
        "abc123",
        ["patchtst"],
    )
    assert comparison["verdict"] == record["verdict"] == "differs"
    assert comparison["items"]["grads/w"]["max_rel"] == pytest.approx(0.01)
    assert len(record["ours"]["commit"]) == 40 and record["ours"]["torch"] == torch.__version__
    assert record["ours"]["machine"] and comparison["tests"] == ["test_toy"]


def test_scale_measures_a_quantity_that_should_be_zero_against_its_neighbours(helper_module):
    helper = helper_module.Parity("t")
    helper.load("toy")
    noise, zero = torch.full((3,), 1e-9, dtype=torch.float64), np.zeros(3)
    assert helper.compare("zero by symmetry", noise, zero, scale=1.0) == pytest.approx(1e-9)
    with pytest.raises(AssertionError):
        helper.compare("zero by symmetry", noise, zero)
