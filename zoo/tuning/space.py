"""Search spaces as data: what a task declares per method for ``zoo tune`` (issue 26).

A space maps a config key (``model.init_args.lr``, as on the command line without ``--``) to a parameter. Keys
under ``<prefix>.router_kwargs.<name>`` are gathered into one ``--<prefix>.router_kwargs`` dict, because a router's
knobs travel as one init argument. Plain Python: a spec imports this without importing Optuna.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Union


@dataclass(frozen=True)
class Float:
    """A real number in [low, high], sampled on a log scale when ``log``."""

    low: float
    high: float
    log: bool = False

    def suggest(self, trial: Any, name: str) -> float:
        return trial.suggest_float(name, self.low, self.high, log=self.log)

    def describe(self) -> str:
        return f"{self.low:g}–{self.high:g}" + (" (log)" if self.log else "")


@dataclass(frozen=True)
class Int:
    """An integer in [low, high], sampled on a log scale when ``log``."""

    low: int
    high: int
    log: bool = False

    def suggest(self, trial: Any, name: str) -> int:
        return trial.suggest_int(name, self.low, self.high, log=self.log)

    def describe(self) -> str:
        return f"{self.low}–{self.high}" + (" (log)" if self.log else "")


@dataclass(frozen=True)
class Choice:
    """One of ``values`` (numbers, strings or booleans)."""

    values: tuple

    def suggest(self, trial: Any, name: str) -> Any:
        return trial.suggest_categorical(name, list(self.values))

    def describe(self) -> str:
        return "{" + ", ".join(str(v) for v in self.values) + "}"


Param = Union[Float, Int, Choice]  # noqa: UP007 - a runtime alias used in isinstance checks below
SearchSpace = Mapping[str, Param]


def check_space(space: SearchSpace, where: str) -> None:
    """Raise ValueError (a spec author's bug) for a key that is not a config key or a value that is no Param."""
    for key, param in space.items():
        if key.startswith("-") or "." not in key:
            raise ValueError(f"{where}: search-space key {key!r} must be a config key such as 'model.init_args.lr'")
        if not isinstance(param, Float | Int | Choice):
            raise ValueError(f"{where}: {key!r} must be a zoo.tuning.space Float, Int or Choice, not {param!r}")


def suggest(trial: Any, space: SearchSpace) -> dict[str, Any]:
    """One value per key, drawn through the trial (so the study records and learns from it)."""
    return {key: param.suggest(trial, key) for key, param in space.items()}


def as_overrides(params: Mapping[str, Any]) -> list[str]:
    """Command-line overrides for chosen values; router knobs merged into one ``router_kwargs`` dict each."""
    plain, grouped = [], {}
    for key, value in params.items():
        head, sep, knob = key.partition(".router_kwargs.")
        if sep:
            grouped.setdefault(f"{head}.router_kwargs", {})[knob] = value
        else:
            plain.append(f"--{key}={json.dumps(value) if isinstance(value, bool) else value}")
    return plain + [f"--{key}={json.dumps(knobs)}" for key, knobs in grouped.items()]


def describe(space: SearchSpace) -> str:
    """The space in one line, for a table row: ``lr 1e-4–1e-2 (log), hidden {32, 64}``."""
    return ", ".join(f"{key.rpartition('.')[2]} {param.describe()}" for key, param in space.items()) or "(nothing)"
