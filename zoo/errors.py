"""Exceptions that the `zoo` command turns into one short message and a non-zero exit code."""


class ZooError(Exception):
    """Base class: a problem the user can fix (bad config, missing data), reported without a traceback."""


class ConfigError(ZooError, ValueError):
    """A config value names something that does not exist (unknown task, router, expert type, ...)."""


class DatasetNotFoundError(ZooError, FileNotFoundError):
    """A named dataset could not be found locally nor downloaded."""


class ChecksumError(ZooError):
    """A dataset file exists but its sha256 differs from the one recorded for it."""


class NonFiniteLossError(ZooError, FloatingPointError):
    """The training loss became NaN or infinite; the run stops and keeps its last good checkpoint."""
