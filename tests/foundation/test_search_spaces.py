"""Every task's declared `zoo tune` spaces and router-matrix row name things that exist (issue 26): each key is an
init argument of the model (or datamodule) of every row it tunes, each matrix row resolves, and the MoE row's
model takes the router arguments the matrix sets."""

import pytest
import yaml
from zoo_testing import class_parser

from zoo.registry import discover, load_object
from zoo.runner.rows import find_row
from zoo.tuning.matrix_row import cell_overrides, requires
from zoo.tuning.router_knobs import ROUTER_KNOBS
from zoo.tuning.space import check_space

SPECS = [load.spec for load in discover() if load.spec is not None and (load.spec.search_spaces or load.spec.matrix)]


def _init_args(spec, row, part: str) -> set[str]:
    """The init arguments LightningCLI gives the row's model (or datamodule) class: jsonargparse's view, which also
    follows ``**kwargs`` passed on to a base class or a network."""
    config = yaml.safe_load(spec.config_path(row.config).read_text())
    module, _, name = config[part]["class_path"].rpartition(".")
    parser = class_parser(load_object(f"{module}:{name}"), part, fail_untyped=False)
    return {action.dest.partition(".")[2] for action in parser._actions if action.dest.startswith(f"{part}.")}


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
def test_search_space_keys_are_init_arguments_of_the_rows_they_tune(spec):
    for method, space in spec.search_spaces.items():
        check_space(space, f"{spec.name}/{method}")
        rows = [row for row in spec.benchmark if row.method == method]
        assert rows, f"{spec.name}: search space for {method!r}, which no benchmark row has"
        for row in rows:
            for key in space:
                part, _, arg = key.partition(".init_args.")
                assert arg in _init_args(spec, row, part), f"{spec.name}/{method}: {key} is not an init argument"


@pytest.mark.parametrize("spec", [s for s in SPECS if s.matrix], ids=lambda s: s.name)
def test_matrix_rows_resolve_and_take_a_router(spec):
    moe, dense = find_row(spec, spec.matrix.row), find_row(spec, spec.matrix.dense)
    assert moe.method in spec.search_spaces and dense.method in spec.search_spaces  # equal budgets need both
    part, _, _ = spec.router_arg.partition(".init_args")
    args = _init_args(spec, moe, part)
    assert "router" in args
    assert "router_kwargs" in args or not any(ROUTER_KNOBS.values())
    assert spec.matrix.trials >= 1 and spec.matrix.seeds
    for text in requires(spec.matrix):
        find_row(spec, text)
    for row, router in ((dense, None), (moe, "topk")):  # each cell's init-argument overrides exist in its model
        for flag in cell_overrides(spec.matrix, router):
            key = flag.removeprefix("--").partition("=")[0]
            part, _, arg = key.partition(".init_args.")
            assert not arg or arg in _init_args(spec, row, part), f"{spec.name}/{row.method}: {flag} is not an argument"
