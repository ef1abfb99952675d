"""Records must name the code that made them: a grid refuses to write them while source files differ from HEAD."""

from __future__ import annotations

from zoo.errors import ConfigError
from zoo.runinfo import dirty_sources
from zoo.runner.task_home import TaskHome


def refuse_dirty_tree(home: TaskHome | None = None) -> None:
    """Refuse while the core's source files differ from HEAD, or those of the plugin project ``home`` whose commit
    the records will name."""
    dirty = [*(dirty_sources() or []), *(home.dirty_sources() if home is not None else [])]
    if dirty:
        shown = ", ".join(dirty[:5]) + (f" and {len(dirty) - 5} more" if len(dirty) > 5 else "")
        raise ConfigError(
            f"source files differ from the last commit ({shown}): commit them so the records name the code "
            "that made them, or pass --allow-dirty (the records then list those files)"
        )
