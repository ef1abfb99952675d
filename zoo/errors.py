"""Exceptions that the `zoo` command turns into one short message and a non-zero exit code.

``ZooError`` and ``ConfigError`` live in ``zoo.moe.errors`` (so ``zoo.moe`` stands alone) and are re-exported here:
``zoo.errors.ConfigError is zoo.moe.errors.ConfigError``.
"""

from zoo.moe.errors import ConfigError, ZooError

__all__ = ["ChecksumError", "ConfigError", "DatasetNotFoundError", "NonFiniteLossError", "ZooError"]


class DatasetNotFoundError(ZooError, FileNotFoundError):
    """A named dataset could not be found locally nor downloaded."""


class ChecksumError(ZooError):
    """A dataset file exists but its sha256 differs from the one recorded for it."""


class NonFiniteLossError(ZooError, FloatingPointError):
    """The training loss became NaN or infinite; the run stops and keeps its last good checkpoint."""
