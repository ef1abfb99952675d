"""Every benchmark row of every registered task resolves through the ``zoo fit`` parser (config file plus the
row's overrides), so a row whose override names a key its model does not have fails here, not hours into a
``zoo reproduce`` grid (TimeMoDE's bootstrap at length 96 was given the DiT's patch length)."""

from __future__ import annotations

import pytest
from zoo_testing import fit_parser

from zoo.registry import discover

SPECS = {load.name: load.spec for load in discover() if load.spec is not None}


@pytest.fixture(scope="module")
def parser():
    spec = SPECS["seer"]
    return fit_parser(spec.config_path(spec.default_config))


@pytest.mark.parametrize("task", sorted(SPECS))
def test_every_row_parses(parser, task):
    spec = SPECS[task]
    for row in spec.benchmark:
        config = parser.parse_args(["--config", str(spec.config_path(row.config)), *row.overrides])
        assert config.model is not None, f"{row.method} / {row.dataset}"
