"""``--task NAME``: the shortcut for a task's default config, shared by ``zoo fit`` and ``zoo evaluate``."""

from __future__ import annotations


def expand_task_shortcut(args: list[str]) -> list[str]:
    """``--task NAME`` → ``--config <that task's default config>``."""
    if "--task" not in args:
        return args
    i = args.index("--task")
    if i + 1 >= len(args):
        from zoo.errors import ConfigError

        raise ConfigError("--task needs a task name (see `zoo list`)")
    from zoo.registry import get_task

    spec = get_task(args[i + 1])
    return [*args[:i], "--config", str(spec.config_path(spec.default_config)), *args[i + 2 :]]
