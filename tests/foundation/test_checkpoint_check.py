"""The weight check before a resume: one line for weights that do not fit, none for a model built in setup()."""

from __future__ import annotations

from pathlib import Path

import pytest
import pytorch_lightning as pl
from torch import nn

from zoo.cli.checkpoint_check import check_state_dict
from zoo.errors import ConfigError


class Eager(pl.LightningModule):
    def __init__(self, width: int = 4):
        super().__init__()
        self.net = nn.Linear(3, width)


class BuiltInSetup(pl.LightningModule):
    """Like the RL agent: its networks exist only after ``setup()`` has seen the environment."""

    def __init__(self):
        super().__init__()
        self.net = None

    def setup(self, stage: str) -> None:
        self.net = nn.Linear(3, 4)


SHAPES = {"net.weight": (4, 3), "net.bias": (4,)}


def test_a_model_built_in_setup_is_not_refused_for_weights_it_does_not_hold_yet():
    check_state_dict(SHAPES, BuiltInSetup(), Path("last.ckpt"))  # would say "2 unexpected" without the rule


def test_weights_that_do_not_fit_are_one_line_naming_the_first_one():
    check_state_dict(SHAPES, Eager(), Path("last.ckpt"))
    with pytest.raises(ConfigError, match=r"2 of another shape \(e.g. net.bias: \(4,\) there, \(8,\) here\)"):
        check_state_dict(SHAPES, Eager(width=8), Path("last.ckpt"))
    with pytest.raises(ConfigError, match="1 unexpected"):
        check_state_dict({**SHAPES, "head.weight": (2, 4)}, Eager(), Path("last.ckpt"))
