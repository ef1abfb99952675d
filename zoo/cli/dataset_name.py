"""A run on a user's own dataset (``--data.init_args.path P``) names that dataset, not the catalogue's default.

A datamodule whose init args name a catalogue dataset (``name: MUTAG``, ``scene: standup``, ``dataset: ETT-small``
with ``file: ETTh1.csv``) and that reads ``path`` instead when one is given declares those fields in a class
attribute ``catalogue_fields`` (field -> how the user's dataset is named from ``path``). ``zoo fit`` and every
command built on it set these fields from ``path`` right after parsing, so the saved ``config.yaml``, the
checkpoint's hyper-parameters and the records of ``zoo evaluate`` name the data that was read.

How a field is named from ``path`` (the values of ``catalogue_fields``):

* ``"stem"``: the file's name without its suffix, or the folder's name (``weather.csv`` -> ``weather``);
* ``"name"``: the file's or folder's name as it is (``weather.csv``);
* a file pattern with one ``*`` (``"*_A.txt"``): the ``*`` part of the file that matches in the folder or one of
  its subfolders (TU's ``<NAME>_A.txt``); when several match, the one equal to the field's value (ignoring case),
  else the field is left as given (the datamodule then says which datasets the folder holds).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

CATALOGUE_FIELDS = "catalogue_fields"
PATH_KEY = "path"


def _matched_names(folder: Path, pattern: str) -> list[str]:
    """The ``*`` parts of the files matching ``pattern`` in ``folder`` and its direct subfolders."""
    regex = re.compile("^" + "(.+)".join(re.escape(p) for p in pattern.split("*")) + "$")
    files = [*folder.glob(pattern), *folder.glob(f"*/{pattern}")]
    return sorted({m.group(1) for f in files if f.is_file() and (m := regex.match(f.name))})


def path_dataset_name(path: str | Path, how: str, current: Any = None) -> str | None:
    """The name a catalogue field takes for a run on ``path`` (see the module docstring), or None when ``path``
    does not tell (missing, or not the layout the pattern expects): the field then stays as given."""
    path = Path(os.path.abspath(Path(path).expanduser()))  # `.` and `data/..` named by the folder they stand for
    if not path.exists():
        return None
    if how == "stem":
        return path.stem if path.is_file() else path.name
    if how == "name":
        return path.name
    if "*" not in how or not path.is_dir():
        return None
    found = _matched_names(path, how)
    if len(found) == 1:
        return found[0]
    lowered = {name.lower(): name for name in found}
    return lowered.get(str(current).lower()) if current is not None else None


def name_user_dataset(data: Any) -> dict[str, str]:
    """When config node ``data`` (``class_path``, ``init_args``) reads a user's ``path`` and its class declares
    ``catalogue_fields``: set those fields of ``init_args`` to the user's dataset's name, in place. Returns what
    changed (field -> new value)."""
    from jsonargparse._util import import_object

    class_path = data.get("class_path") if hasattr(data, "get") else None
    init_args = data.get("init_args") if hasattr(data, "get") else None
    if not class_path or init_args is None or init_args.get(PATH_KEY) is None:
        return {}
    try:
        fields = getattr(import_object(class_path), CATALOGUE_FIELDS, None)
    except Exception:  # noqa: BLE001 - the parser names a bad class path itself
        return {}
    if not isinstance(fields, Mapping):
        return {}
    changed = {}
    for field, how in fields.items():
        name = path_dataset_name(init_args[PATH_KEY], how, init_args.get(field))
        if name is not None and name != init_args.get(field):
            init_args[field] = changed[field] = name
    return changed
