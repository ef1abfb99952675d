"""Config checks shared by the graph models: one ConfigError line naming the key, the value and the valid choices."""

from __future__ import annotations

from collections.abc import Iterable

from zoo.errors import ConfigError


def check_choice(key: str, value: object, choices: Iterable[object]) -> None:
    """Raise ``ConfigError`` unless ``value`` is one of ``choices``."""
    choices = tuple(choices)
    if value not in choices:
        raise ConfigError(f"{key}={value!r} is not valid; choose from {', '.join(map(str, choices))}")
