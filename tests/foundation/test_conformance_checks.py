"""The conformance suite's checks can fail: a routing of inconsistent shapes, a step without the protocol, a gate
without gradient, a refusal the case does not declare (or a declared one that trains) and a checkpoint that does not
hold what the module evaluates with are each reported, naming what is wrong."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from torch import nn

from zoo import conformance_run
from zoo.conformance_probe import ConformanceFailure, StepProbe, check_routing, check_step_output
from zoo.moe import Routing
from zoo.registry import get_task


def _routing(tokens: int = 4, k: int = 2, experts: int = 3) -> Routing:
    indices = torch.stack([torch.arange(k) % experts] * tokens)
    return Routing(indices, torch.full((tokens, k), 1.0 / k), torch.zeros(tokens, experts))


def test_a_sound_routing_and_step_pass():
    check_routing("moe", _routing())
    assert list(check_step_output({"loss": torch.tensor(1.0), "routing": {"moe": _routing()}}, "step")) == ["moe"]


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda r: dataclasses.replace(r, weights=r.weights[:, :1]), r"weights \(4, 1\) differ from indices \(4, 2\)"),
        (lambda r: dataclasses.replace(r, logits=r.logits[:3]), r"logits must be \(T=4, E\)"),
        (lambda r: dataclasses.replace(r, indices=r.indices + 5), r"an expert index outside \[-1, 3\)"),
        (lambda r: dataclasses.replace(r, probs=torch.ones(4, 2)), r"probs must be \(T=4, E=3\)"),
        (lambda r: dataclasses.replace(r, weights=r.weights * float("nan")), "non-finite combine weights"),
        (lambda r: "not a routing", "expected a zoo.moe.Routing, got str"),
    ],
)
def test_an_inconsistent_routing_is_reported(change, message):
    with pytest.raises(ConformanceFailure, match=message):
        check_routing("moe", change(_routing()))


@pytest.mark.parametrize(
    "output, message",
    [
        (None, "training_step must return a dict"),
        ({"loss": torch.tensor(float("inf")), "routing": {"moe": _routing()}}, "the loss is not finite"),
        ({"loss": torch.ones(2), "routing": {"moe": _routing()}}, "the loss must be a scalar"),
        ({"loss": torch.tensor(1.0)}, "the step must return 'routing'"),
        ({"loss": torch.tensor(1.0), "routing": {}}, "the step must return 'routing'"),
    ],
)
def test_a_step_without_the_protocol_is_reported(output, message):
    with pytest.raises(ConformanceFailure, match=message):
        check_step_output(output, "step 0")


def test_a_gate_without_gradient_is_reported():
    model = nn.ModuleDict({"router": nn.Linear(2, 2), "expert": nn.Linear(2, 2)})
    model["expert"](torch.ones(1, 2)).sum().backward()  # the gate is not in the graph
    probe = StepProbe(("router",))
    probe.on_after_backward(None, model)
    with pytest.raises(ConformanceFailure, match=r"no gradient reached the gate\(s\) \['router'\]"):
        probe.check_gradients("toy")
    model["router"](torch.ones(1, 2)).sum().backward()
    probe.on_after_backward(None, model)
    probe.check_gradients("toy")


@pytest.fixture(scope="module")
def seer():
    """SEER's declared case (ETT-small windows; skipped without the dataset)."""
    spec = get_task("seer")
    case = spec.conformance[0]
    reason = conformance_run.missing_requirement(case)
    if reason:
        pytest.skip(reason)
    return spec, case


def test_a_refusal_the_case_does_not_declare_fails(seer, tmp_path):
    spec, case = seer
    undeclared = dataclasses.replace(case, refuses=())
    with pytest.raises(ConformanceFailure, match="'expert_choice': refused, but ConformanceCase.refuses does not list"):
        conformance_run.check_router(spec, undeclared, "expert_choice", tmp_path)


def test_a_declared_refusal_that_trains_fails(seer, tmp_path):
    spec, case = seer
    overdeclared = dataclasses.replace(case, refuses=(*case.refuses, "topk"))
    with pytest.raises(ConformanceFailure, match="'topk': ConformanceCase.refuses lists it, but the model builds and"):
        conformance_run.check_router(spec, overdeclared, "topk", tmp_path)


def test_a_checkpoint_without_the_weights_the_module_evaluates_with_fails(seer, tmp_path, monkeypatch):
    spec, case = seer
    trained = conformance_run.train_case(spec, case, tmp_path)
    save = trained.cli.trainer.save_checkpoint

    def save_then_change_a_weight(path, *args, **kwargs):  # as if the module kept state outside its state_dict
        save(path, *args, **kwargs)
        with torch.no_grad():
            next(trained.cli.model.parameters()).add_(1.0)

    monkeypatch.setattr(trained.cli.trainer, "save_checkpoint", save_then_change_a_weight)
    with pytest.raises(ConformanceFailure, match="the reloaded module differs in"):
        conformance_run.check_round_trip(trained)
