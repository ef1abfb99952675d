"""The router matrix's n/a probe marks a cell n/a only when the task's model refuses the router; a probe that fails
for another reason (a missing dataset or export) says so and marks nothing."""

from __future__ import annotations

import pytest

from zoo.errors import ConfigError
from zoo.registry import get_task
from zoo.runner import matrix_na


@pytest.fixture()
def refusing(monkeypatch):
    def set_error(message: str) -> None:
        def direction_of(args, tune_metric, folder):
            raise ConfigError(message)

        monkeypatch.setattr("zoo.tuning.study.direction_of", direction_of)

    return set_error


def test_a_router_refusal_is_the_cells_reason(refusing, tmp_path):
    spec = get_task("seer")
    refusing("router 'kern' cannot route SEER's patch mixture: why; routers that apply: topk\nmore")
    reason = matrix_na.probe(spec, spec.benchmark[0], "kern", tmp_path)
    assert reason == "router 'kern' cannot route SEER's patch mixture: why; routers that apply: topk"


def test_a_probe_that_fails_before_the_router_marks_nothing(refusing, tmp_path):
    spec = get_task("seer")
    refusing("no export /cache/standup_mlp__seed0.pt for 'standup_mlp'; train it first")
    with pytest.raises(ConfigError, match="the n/a probe failed before the router was tried: no export"):
        matrix_na.probe(spec, spec.benchmark[0], "kern", tmp_path)
