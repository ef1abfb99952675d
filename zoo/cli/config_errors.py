"""Config errors in a few lines: jsonargparse's message reduced to the offending key, what is wrong with it and
its valid choices, plus one tip; instead of a 55-line usage text. Used by ``ZooCLI``'s parser."""

from __future__ import annotations

import difflib
import importlib
import inspect
import re
from typing import Any

from pytorch_lightning.cli import LightningArgumentParser

from zoo.errors import ConfigError

MAX_CHOICES = 12


def _choices(values: list[str], near: str | None = None) -> str:
    """``valid: a, b, c`` (with the closest match first as ``did you mean``), at most MAX_CHOICES shown."""
    values = list(dict.fromkeys(values))
    hint = ""
    if near:
        close = difflib.get_close_matches(near, values, n=1, cutoff=0.6)
        if close:
            hint = f"did you mean {close[0]!r}? "
    more = f", ... ({len(values) - MAX_CHOICES} more)" if len(values) > MAX_CHOICES else ""
    return f"{hint}valid: {', '.join(values[:MAX_CHOICES])}{more}"


def _init_args(class_path: str) -> list[str]:
    from jsonargparse._util import import_object

    try:
        cls = import_object(class_path)
        return [p for p in inspect.signature(cls.__init__).parameters if p not in ("self", "args", "kwargs")]
    except Exception:  # noqa: BLE001 - choices are a courtesy; the error line stands without them
        return []


def _registered_classes(key: str) -> list[str]:
    """Class paths of the registered tasks' models (``key`` "model") or datamodules (``key`` "data")."""
    from zoo.registry import discover

    found = []
    for load in discover():
        if load.spec is None:
            continue
        targets = [load.spec.model] if key == "model" else list(getattr(load.spec, "datamodules", {}).values())
        found += [t.replace(":", ".") for t in targets if t]
    return found


def _parser_keys(parser: Any, near: str) -> list[str]:
    """The parser's options in the same group as ``near`` (``--trainer.bogus`` -> every ``--trainer.*``)."""
    keys = []
    for action in getattr(parser, "_actions", []):
        keys += [o for o in action.option_strings if o.startswith("--") and not o.endswith((".help", "+"))]
    group = near.rpartition(".")[0]
    same = [k for k in keys if group and k.startswith(group + ".")]
    return same or keys


def _type_name(text: str) -> str:
    return re.sub(r"<class '([^']+)'>", r"\1", text)


def missing_dependency_in(message: str) -> str | None:
    """One line when a class path of ``message`` failed to import because a third-party package is not installed
    (``zoo.registry.missing_dependency``): jsonargparse's own text says only "No module named ...", so the class's
    module is imported again to find which package and who needs it."""
    from zoo.registry import missing_dependency

    for class_path in dict.fromkeys(re.findall(r"Problem with given class_path '([^']+)'", message)):
        try:
            importlib.import_module(class_path.rpartition(".")[0])
        except ImportError as exc:
            if line := missing_dependency(exc):
                return line
    return None


def summarize(message: str, parser: Any = None) -> tuple[str, str]:
    """(error line, choices line) for a jsonargparse error ``message``."""
    text = message.strip()
    keys = re.findall(r'Parser key "([^"]+)"', text)
    outer = keys[0] if keys else ""
    class_path = re.search(r"Problem with given class_path '([^']+)'", text)
    if m := re.search(r"unrecognized arguments: (\S+)", text):
        arg = m.group(1)
        return f"unknown option {arg}", _choices(_parser_keys(parser, arg), arg)
    if m := re.search(r"Unexpected import path format: (\S+)", text):
        given = m.group(1)
        fix = f"; write {given.replace(':', '.')!r} (the 'module:Class' form is for TaskSpec)" if ":" in given else ""
        return f"{outer or 'config'}.class_path: {given!r} is not a dotted class path{fix}", ""
    if m := re.search(r"File does not exist: '?([^'\n]+)'?", text):
        return f"{outer or 'config'}: file not found: {m.group(1)}", "paths are relative to the working directory"
    if class_path and (m := re.search(r"Option '([^']+)' is not accepted", text)):
        key = f"{outer}.init_args.{m.group(1)}"
        return f"unknown key {key} for {class_path.group(1)}", _choices(_init_args(class_path.group(1)), m.group(1))
    if class_path and (m := re.search(r"has no attribute '([^']+)'|No module named '([^']+)'", text)):
        return (
            f"{outer}.class_path: cannot import {class_path.group(1)}",
            _choices(_registered_classes(outer), class_path.group(1)),
        )
    if class_path and len(keys) > 1:
        key = f"{outer}.init_args.{keys[-1]}"
        detail = text.split(f'Parser key "{keys[-1]}":', 1)[1].strip().splitlines()[0].strip()
        if m := re.match(r"Expected a (.+?)\. Got value: (.*)$", detail):
            detail = f"expected {_type_name(m.group(1))}, got {m.group(2).strip()!r}"
        return f"{key}: {detail}", f"in {class_path.group(1)}"
    literals = re.findall(r"Literal\[([^\]]+)\]", text)
    if literals:
        given = re.search(r"Given value: (.*)", text)
        values = [v.strip().strip("'\"") for group in literals for v in group.split(",")]
        return (f"{outer}: {given.group(1).strip() if given else 'value'} is not allowed", _choices(values))
    if outer and (m := re.search(r"Expected a (.+?)(?:\. Got value: (.*))?$", text, re.MULTILINE)):
        got = f", got {m.group(2).strip()!r}" if m.group(2) else ""
        return f"{outer}: expected {_type_name(m.group(1).strip())}{got}", ""
    if m := re.search(r"Expected a dot import path string: (\S+)", text):
        return f"{outer}: {m.group(1)!r} is not a class path (e.g. torch.optim.Adam)", ""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return " ".join(lines[:2])[:400], ""


def short_message(message: str, parser: Any = None) -> str:
    """At most three lines: the error, its choices, a tip."""
    error, choices = summarize(message, parser)
    prog = (getattr(parser, "prog", None) or "zoo fit").replace(" [options]", "")
    lines = [error] + ([f"  {choices}"] if choices else []) + [f"  tip: `{prog} --help` lists every option"]
    return "\n".join(lines)


def user_error_in(exc: BaseException | None) -> BaseException | None:
    """The ZooError (or Lightning configuration error) behind ``exc``, if any: jsonargparse wraps what a class's
    ``__init__`` raised ("Does not validate against any of the Union subtypes") and Lightning may wrap it too, so
    every cause and context is searched, breadth first."""
    import sys

    from zoo.errors import ZooError

    user_errors: tuple[type, ...] = (ZooError,)
    if "lightning_fabric" in sys.modules:
        from lightning_fabric.utilities.exceptions import MisconfigurationException

        user_errors = (ZooError, MisconfigurationException)
    queue, seen = [exc], set()
    while queue:
        current = queue.pop(0)
        if current is None or id(current) in seen:
            continue
        if isinstance(current, user_errors):
            return current
        seen.add(id(current))
        queue += [current.__cause__, current.__context__]
    return None


class ZooArgumentParser(LightningArgumentParser):
    """``LightningArgumentParser`` whose user-facing errors raise :class:`ConfigError` with :func:`short_message`
    (printed by ``zoo`` without a traceback); inner parsers that jsonargparse probes with keep their behaviour.
    Options are never abbreviated (``--trainer.max_epoch`` is an unknown option, not ``--trainer.max_epochs``):
    an abbreviation accepted silently hides a typo."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)  # the subcommands' parsers copy it from the main parser
        super().__init__(*args, **kwargs)

    def error(self, message: str, ex: Exception | None = None):
        from jsonargparse._common import debug_mode_active

        if not self.exit_on_error or debug_mode_active():
            return super().error(message, ex)
        self._logger.error(message)
        raise ConfigError(missing_dependency_in(message) or short_message(message, self)) from None
