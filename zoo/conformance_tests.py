"""The conformance suite (:mod:`zoo.conformance`) as pytest tests, parametrised over every discovered task (timm-style:
one test per task, per declared case and per case x router), or over the tasks ``$ZOO_CONFORMANCE_TASKS`` names.

Run it with ``python -m zoo.conformance [TASK ...]``; the repository collects it in
``tests/foundation/test_conformance.py``. A case that needs a dataset or a package this machine lacks is skipped with
a one-line reason; a case's training run is shared by its protocol, round-trip and router tests.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from zoo import conformance, conformance_run
from zoo.registry import ConformanceCase, TaskSpec

TASKS = conformance.selected_tasks()
SPECS: dict[str, TaskSpec] = {name: spec for name, spec in sorted(TASKS.items()) if isinstance(spec, TaskSpec)}
CASES = [
    pytest.param(name, case, id=f"{name}/{case.name}") for name, spec in SPECS.items() for case in spec.conformance
]
ROUTER_CASES = [
    pytest.param(name, case, router, id=f"{name}/{case.name}/{router}")
    for name, spec in SPECS.items()
    for case in spec.conformance
    for router in conformance.case_routers(case)
]
_trained: dict[tuple[str, str], object] = {}  # (task, case) -> TrainedCase, or the exception its training raised


@pytest.fixture(autouse=True)
def _one_thread():
    """Tiny models train fastest on one intra-op thread (on a busy CPU, OpenMP threads spin-wait on each other)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def conformance_root(tmp_path_factory) -> Path:
    """The folder every case writes its runs and files into (one subfolder per task and case)."""
    return tmp_path_factory.mktemp("conformance")


@pytest.fixture(scope="session")
def row_parser():
    """One ``zoo fit`` parser (it resolves any task's config), built once."""
    for spec in SPECS.values():
        for row in spec.benchmark:
            return conformance.fit_parser(spec.config_path(row.config))
    return None


def trained_case(task: str, case: ConformanceCase, root: Path):
    """``case`` of ``task`` after its two training steps (trained once per session); skips when it cannot run here."""
    key = (task, case.name)
    if key not in _trained:
        try:
            _trained[key] = conformance_run.train_case(SPECS[task], case, root / task / case.name)
        except Exception as exc:  # noqa: BLE001 - kept, and raised again in each test that needs the run
            _trained[key] = exc
    found = _trained[key]
    if isinstance(found, conformance_run.CaseSkipped):
        pytest.skip(str(found))
    if isinstance(found, BaseException):
        raise found
    return found


@pytest.mark.parametrize("task", sorted(TASKS))
def test_task_loads(task):
    assert isinstance(TASKS[task], TaskSpec), TASKS[task]


@pytest.mark.parametrize("task", sorted(SPECS))
def test_task_declares_its_tiny_models(task):
    assert SPECS[task].conformance, (
        f"{task}: TaskSpec.conformance declares no zoo.registry.ConformanceCase (a tiny model of the task that this "
        "suite trains); see docs/writing-a-task.md, 'Check your plugin'"
    )


@pytest.mark.parametrize("task", sorted(SPECS))
def test_package_brings_configs_and_dataset_checksums(task):
    problems = conformance.package_problems(SPECS[task])
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("task", sorted(SPECS))
def test_every_benchmark_row_parses(task, row_parser):
    problems = conformance.row_problems(SPECS[task], row_parser)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("task,case", CASES)
def test_two_training_steps_follow_the_step_protocol(task, case, conformance_root):
    conformance_run.check_protocol(trained_case(task, case, conformance_root))


@pytest.mark.parametrize("task,case", CASES)
def test_a_checkpoint_loads_into_a_fresh_module_with_the_same_outputs(task, case, conformance_root):
    conformance_run.check_round_trip(trained_case(task, case, conformance_root))


@pytest.mark.parametrize("task,case,router", ROUTER_CASES)
def test_router_trains_or_is_refused_as_declared(task, case, router, conformance_root):
    try:  # the case's own run has read its data: its datamodule is reused
        datamodule = trained_case(task, case, conformance_root).cli.datamodule
    except pytest.skip.Exception:
        raise
    except Exception:  # noqa: BLE001 - the case's own test reports that failure; this router builds its own data
        datamodule = None
    root = conformance_root / task / case.name
    try:
        conformance_run.check_router(SPECS[task], case, router, root, datamodule)
    except conformance_run.CaseSkipped as exc:
        pytest.skip(str(exc))
