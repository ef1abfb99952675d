"""The exceptions `zoo.moe` raises; `zoo.errors` re-exports them, so the zoo CLI reports them without a traceback.

Kept inside `zoo.moe` so the MoE library stands alone (``import zoo.moe`` imports nothing else of the zoo).
"""


class ZooError(Exception):
    """Base class: a problem the user can fix (bad config, missing data), reported without a traceback."""


class ConfigError(ZooError, ValueError):
    """A config value names something that does not exist (unknown task, router, expert type, ...)."""
